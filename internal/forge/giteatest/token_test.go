package giteatest

import "testing"

func TestTokenLine(t *testing.T) {
	const tok = "8a606d2535b26fd790173923be017130cd43e066"
	for _, tc := range []struct{ out, want string }{
		{tok + "\n", tok},
		// Gitea's console logger writes from its own goroutine: its lines
		// can come before or after the token.
		{"2026/12/03 12:40:29 modules/setting/setting.go:190:loadRunModeFrom() [E] You are running Gitea using the root user\n" + tok + "\n2026/12/03 12:40:29 .../command_run.go:94:(*Command).Run() [I] PING DATABASE sqlite3\n", tok},
		{"New user 'ferry-admin' has been successfully created!\n", ""},
		{"", ""},
		{tok[:39] + "\n", ""},
	} {
		if got := tokenLine(tc.out); got != tc.want {
			t.Errorf("tokenLine(%q) = %q, want %q", tc.out, got, tc.want)
		}
	}
}
