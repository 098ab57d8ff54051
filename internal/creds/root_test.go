package creds

import (
	"strings"
	"testing"
)

func TestRoot(t *testing.T) {
	secret := strings.Repeat("s", MinRootSecretLen)
	r, err := NewRoot("ROOTADMIN01", secret)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := r.Secret([]byte("ROOTADMIN01")); !ok || string(got) != secret {
		t.Errorf("Secret(root) = %q, %v", got, ok)
	}
	for _, id := range []string{"ROOTADMIN0", "ROOTADMIN011", "rootadmin01", ""} {
		if _, ok := r.Secret([]byte(id)); ok {
			t.Errorf("Secret(%q) matched", id)
		}
	}
	var none *Root
	if _, ok := none.Secret([]byte("ROOTADMIN01")); ok {
		t.Error("nil Root matched")
	}
	if r.AccessKeyID() != "ROOTADMIN01" {
		t.Errorf("AccessKeyID = %q", r.AccessKeyID())
	}

	bad := []struct{ id, secret, want string }{
		{"AB", secret, "want 3..128"},
		{strings.Repeat("A", 129), secret, "want 3..128"},
		{"ROOT-ADMIN", secret, "letters and digits"},
		{"DILAAAAAAAAAAAAAAAAA", secret, "shape of a minted key id"},
		{"ROOTADMIN01", secret[1:], "need at least 32"},
	}
	for _, tt := range bad {
		if _, err := NewRoot(tt.id, tt.secret); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewRoot(%q) err = %v, want %q", tt.id, err, tt.want)
		}
	}
}
