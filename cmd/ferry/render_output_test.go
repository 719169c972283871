package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// render -o writes below its folder and through no symlink: one committed
// where a decrypted Secret is written must not send it elsewhere.
func TestRenderOutputStaysInItsFolder(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, r *testRepo, out, outside string)
		want  []string // parts of stderr
	}{
		{
			name: "a link where the Secret goes",
			setup: func(t *testing.T, r *testRepo, out, outside string) {
				mkdir(t, filepath.Join(out, "app"))
				symlink(t, filepath.Join(outside, "stolen.yaml"), filepath.Join(out, "app", "secret_db.yaml"))
			},
			want: []string{`target "app"`, "out/app/secret_db.yaml is a symlink"},
		},
		{
			name: "the target's folder is a link",
			setup: func(t *testing.T, r *testRepo, out, outside string) {
				mkdir(t, out)
				symlink(t, outside, filepath.Join(out, "app"))
			},
			want: []string{`target "app"`, "out/app is a symlink"},
		},
		{
			name: "the output folder is a link",
			setup: func(t *testing.T, r *testRepo, out, outside string) {
				symlink(t, outside, out)
			},
			want: []string{"-o ", "out is a symlink"},
		},
		{
			name: "a target name that climbs out",
			setup: func(t *testing.T, r *testRepo, out, outside string) {
				r.write("ferry.yaml", "targets:\n  - name: ../outside\n    path: app\n")
			},
			want: []string{`ferry.yaml: targets[0]: name "../outside"`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newSecretRepo(t)
			base := t.TempDir()
			out, outside := filepath.Join(base, "out"), filepath.Join(base, "outside")
			mkdir(t, outside)
			tc.setup(t, r, out, outside)
			res := ferry(t, r.vars(), "render", "--repo", r.dir, "-o", out)
			if res.code != exitError {
				t.Fatalf("exit %d, want 2; stderr: %s", res.code, res.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(res.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, res.stderr)
				}
			}
			if got := listFiles(t, outside); len(got) != 0 {
				t.Errorf("wrote outside the output folder: %v", got)
			}
			for _, c := range canaries {
				if strings.Contains(res.stderr+res.stdout, c) {
					t.Errorf("%s printed", c)
				}
			}
		})
	}
}

// A file left from an earlier run is replaced, and a Secret is written
// for the owner only even where a readable file was.
func TestRenderOutputReplacesFiles(t *testing.T) {
	r := newSecretRepo(t)
	out := t.TempDir()
	mkdir(t, filepath.Join(out, "app"))
	secret := filepath.Join(out, "app", "secret_db.yaml")
	if err := os.WriteFile(secret, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if res := ferry(t, r.vars(), "render", "--repo", r.dir, "-o", out); res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	fi, err := os.Lstat(secret)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != 0o600 {
		t.Errorf("Secret file mode %v, want -rw-------", fi.Mode())
	}
	if b, _ := os.ReadFile(secret); !strings.Contains(string(b), canaries[0]) {
		t.Errorf("Secret file not rewritten: %q", b)
	}
}

func mkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
