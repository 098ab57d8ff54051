package admin

// The request and response bodies, with the seeds' JSON field names, so
// the predecessor's scripts run unchanged.

// Tag is a tag: POST …/governance/tags.
type Tag struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Comment   string `json:"comment,omitempty"`
}

// ObjectTag puts a tag on a schema, table or column: POST and DELETE
// …/governance/object-tags.
type ObjectTag struct {
	ObjectKind   string `json:"object-kind"`
	Schema       string `json:"schema"`
	Object       string `json:"object,omitempty"`
	Column       string `json:"column,omitempty"`
	TagNamespace string `json:"tag-namespace"`
	TagName      string `json:"tag-name"`
}

// MaskingPolicy is POST …/governance/masking-policies: a SQL body over the
// signature's parameter, or one of the read-restrictions proposal's
// standard actions.
type MaskingPolicy struct {
	Name          string   `json:"name"`
	Signature     string   `json:"signature,omitempty"`
	Body          string   `json:"body,omitempty"`
	Action        string   `json:"action,omitempty"`
	UnmaskedRoles []string `json:"unmasked-roles"`
	FileLayer     bool     `json:"file-layer-masking"`
	Comment       string   `json:"comment,omitempty"`
}

// RowAccessPolicy is POST …/governance/row-access-policies: a boolean
// keep-predicate over the columns it reads.
type RowAccessPolicy struct {
	Name          string   `json:"name"`
	Body          string   `json:"body"`
	Columns       []string `json:"columns,omitempty"`
	UnmaskedRoles []string `json:"unmasked-roles"`
	Comment       string   `json:"comment,omitempty"`
}

// Attachment attaches a policy: POST and DELETE
// …/governance/policy-attachments.
type Attachment struct {
	PolicyKind   string `json:"policy-kind"`
	PolicyName   string `json:"policy-name"`
	TargetKind   string `json:"target-kind"`
	TagNamespace string `json:"tag-namespace,omitempty"`
	TagName      string `json:"tag-name,omitempty"`
	Schema       string `json:"schema,omitempty"`
	Object       string `json:"object,omitempty"`
	Column       string `json:"column,omitempty"`
}

// Role is POST …/governance/roles.
type Role struct {
	Name    string `json:"name"`
	Comment string `json:"comment,omitempty"`
}

// RoleGrant is POST and DELETE …/governance/role-grants.
type RoleGrant struct {
	Role      string `json:"role"`
	Principal string `json:"principal"`
}

// ObjectGrant is POST and DELETE …/governance/object-grants.
type ObjectGrant struct {
	ObjectKind string `json:"object-kind"`
	Schema     string `json:"schema"`
	Object     string `json:"object,omitempty"`
	Privilege  string `json:"privilege"`
	Role       string `json:"role"`
}
