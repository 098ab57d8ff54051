//go:build !linux

package testsupport

import "os/exec"

// dieWithParent: only Linux can have a child killed with its parent.
func dieWithParent(*exec.Cmd) {}
