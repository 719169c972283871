package forge_test

import (
	"os"
	"testing"

	"github.com/ferry-ci/ferry/internal/forge/giteatest"
)

// TestMain stops the Gitea the Gitea-backed tests start on first use.
func TestMain(m *testing.M) {
	code := m.Run()
	giteatest.Stop()
	os.Exit(code)
}
