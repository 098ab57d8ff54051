package governance

// Action is what a request does. The S3 actions are what an S3 operation
// does to the keys it names (ActionOf maps an operation to them); the
// catalog actions name the Iceberg REST routes, one each, so that the route
// table, the metrics and the audit trail speak of the same thing.
type Action uint8

// The actions.
const (
	ActionUnknown Action = iota

	// S3, on an object key (or, for ActionListObjects, a prefix).
	ActionReadObject   // GetObject, HeadObject, attributes, tagging; a copy source
	ActionWriteObject  // PutObject, CopyObject's target, multipart, tagging
	ActionDeleteObject // DeleteObject, each key of DeleteObjects
	ActionListObjects  // ListObjects(V2), versions, multipart uploads: the prefix
	ActionReadBucket   // HeadBucket, GetBucketLocation: the bucket alone
	ActionListBuckets  // ListBuckets: the service (the answer shows granted buckets only)

	// The Iceberg REST catalog, on the catalog or a namespace.
	ActionListNamespaces
	ActionLoadNamespace
	ActionCreateNamespace
	ActionDropNamespace
	ActionUpdateNamespace

	// The Iceberg REST catalog, on a table.
	ActionListTables
	ActionLoadTable
	ActionCreateTable
	ActionCommitTable
	ActionDropTable
	ActionRenameTable
	ActionRegisterTable
	ActionLoadCredentials // vended credentials (LoadTable's or the credentials route)
	ActionSignRequest     // remote signing of one S3 request
	ActionReportMetrics
	ActionCommitTransaction

	// The Iceberg REST catalog, on a view.
	ActionListViews
	ActionLoadView
	ActionCreateView
	ActionReplaceView
	ActionDropView
	ActionRenameView
	ActionRegisterView

	// Governance authoring and reading, DuckLake-direct vends, agent
	// queries.
	ActionReadGovernance
	ActionAdminGovernance
	ActionVendDuckLake
	ActionQuery

	// The catalog's OAuth2 token endpoint (catalog/oauth).
	ActionIssueToken

	actionEnd
)

// actionInfo is indexed by Action.
var actionInfo = [actionEnd]struct {
	name string
	// need is the OAuth scope capability the action needs on its
	// namespace (catalog actions); admin needs it on every namespace.
	need  Capability
	admin bool
	// write: the action changes data or metadata.
	write bool
	s3    bool
}{
	ActionUnknown:      {name: "Unknown"},
	ActionReadObject:   {name: "ReadObject", s3: true},
	ActionWriteObject:  {name: "WriteObject", s3: true, write: true},
	ActionDeleteObject: {name: "DeleteObject", s3: true, write: true},
	ActionListObjects:  {name: "ListObjects", s3: true},
	ActionReadBucket:   {name: "ReadBucket", s3: true},
	ActionListBuckets:  {name: "ListBuckets", s3: true},

	ActionListNamespaces:  {name: "ListNamespaces", need: CapRead},
	ActionLoadNamespace:   {name: "LoadNamespace", need: CapRead},
	ActionCreateNamespace: {name: "CreateNamespace", need: CapWrite, admin: true, write: true},
	ActionDropNamespace:   {name: "DropNamespace", need: CapWrite, admin: true, write: true},
	ActionUpdateNamespace: {name: "UpdateNamespace", need: CapWrite, write: true},

	ActionListTables:        {name: "ListTables", need: CapRead},
	ActionLoadTable:         {name: "LoadTable", need: CapRead},
	ActionCreateTable:       {name: "CreateTable", need: CapWrite, write: true},
	ActionCommitTable:       {name: "CommitTable", need: CapWrite, write: true},
	ActionDropTable:         {name: "DropTable", need: CapWrite, write: true},
	ActionRenameTable:       {name: "RenameTable", need: CapWrite, write: true},
	ActionRegisterTable:     {name: "RegisterTable", need: CapWrite, write: true},
	ActionLoadCredentials:   {name: "LoadCredentials", need: CapRead},
	ActionSignRequest:       {name: "SignRequest"},
	ActionReportMetrics:     {name: "ReportMetrics", need: CapRead},
	ActionCommitTransaction: {name: "CommitTransaction", need: CapWrite, write: true},

	ActionListViews:    {name: "ListViews", need: CapRead},
	ActionLoadView:     {name: "LoadView", need: CapRead},
	ActionCreateView:   {name: "CreateView", need: CapWrite, write: true},
	ActionReplaceView:  {name: "ReplaceView", need: CapWrite, write: true},
	ActionDropView:     {name: "DropView", need: CapWrite, write: true},
	ActionRenameView:   {name: "RenameView", need: CapWrite, write: true},
	ActionRegisterView: {name: "RegisterView", need: CapWrite, write: true},

	ActionReadGovernance:  {name: "ReadGovernance"},
	ActionAdminGovernance: {name: "AdminGovernance", write: true},
	ActionVendDuckLake:    {name: "VendDuckLake", need: CapRead},
	ActionQuery:           {name: "Query", need: CapRead},
	ActionIssueToken:      {name: "IssueToken"},
}

// String is the action's name, e.g. "LoadTable"; safe as a metrics label.
func (a Action) String() string {
	if a >= actionEnd {
		return "Unknown"
	}
	return actionInfo[a].name
}

// IsS3 reports whether a is an action on S3 keys.
func (a Action) IsS3() bool { return a < actionEnd && actionInfo[a].s3 }

// IsWrite reports whether a changes data or metadata: what an agent
// session may never do.
func (a Action) IsWrite() bool { return a < actionEnd && actionInfo[a].write }

// Needs is the scope capability a catalog action needs on its namespace,
// and whether it needs it on every namespace (catalog-level changes). It is
// 0 for S3 actions, whose credential grants decide, and for the actions
// whose handlers decide from the request (signing needs read or write by
// the S3 operation it signs; governance needs its own scopes).
func (a Action) Needs() (c Capability, everyNamespace bool) {
	if a >= actionEnd {
		return 0, false
	}
	return actionInfo[a].need, actionInfo[a].admin
}
