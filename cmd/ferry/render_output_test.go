package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// render -o writes below its folder and through no symlink: one committed
// where a decrypted Secret is written must not send it elsewhere.
func TestRenderOutputStaysInItsFolder(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, r *scenario, out, outside string)
		want  []string // parts of stderr
	}{
		{
			name: "a link where the Secret goes",
			setup: func(t *testing.T, r *scenario, out, outside string) {
				mkdir(t, filepath.Join(out, "app"))
				symlink(t, filepath.Join(outside, "stolen.yaml"), filepath.Join(out, "app", "secret_db.yaml"))
			},
			want: []string{`target "app"`, "out/app/secret_db.yaml is a symlink"},
		},
		{
			name: "the target's folder is a link",
			setup: func(t *testing.T, r *scenario, out, outside string) {
				mkdir(t, out)
				symlink(t, outside, filepath.Join(out, "app"))
			},
			want: []string{`target "app"`, "out/app is a symlink"},
		},
		{
			name: "the output folder is a link",
			setup: func(t *testing.T, r *scenario, out, outside string) {
				symlink(t, outside, out)
			},
			want: []string{"-o ", "out is a symlink"},
		},
		{
			name: "a target name that climbs out",
			setup: func(t *testing.T, r *scenario, out, outside string) {
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

// A chart hook of both pre and post events is one object: render -o
// writes its file once, holding the hook with both phases (it used to
// hold only the post copy, written over the pre one).
func TestRenderOutputHookOfBothPhases(t *testing.T) {
	r := newScenario(t)
	r.write("ferry.yaml", "targets:\n  - name: app\n    path: app\n")
	r.write("app/kustomization.yaml", "resources: [release.yaml]\n")
	r.write("app/release.yaml", `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: shop}
spec:
  interval: 10m
  chart:
    spec:
      chart: ./charts/web
      sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}
`)
	r.write("charts/web/Chart.yaml", "apiVersion: v2\nname: web\nversion: 1.2.0\n")
	r.write("charts/web/templates/check.yaml", `apiVersion: batch/v1
kind: Job
metadata:
  name: check
  annotations: {helm.sh/hook: "pre-install,post-install"}
spec: {template: {spec: {restartPolicy: Never, containers: [{name: c, image: "busybox:1.36"}]}}}
`)
	out := t.TempDir()
	if res := ferry(t, r.vars(), "render", "--repo", r.dir, "-o", out); res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	want := []string{
		filepath.Join(out, "app"),
		filepath.Join(out, "app", "helmrelease.helm.toolkit.fluxcd.io_shop_web.yaml"),
		filepath.Join(out, "app", "job.batch_shop_check.yaml"),
	}
	if diff := cmp.Diff(want, listFiles(t, out)); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	b, err := os.ReadFile(filepath.Join(out, "app", "job.batch_shop_check.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	wantJob := `apiVersion: batch/v1
kind: Job
metadata:
  annotations:
    ferry.dev/helm-hook: pre,post
    helm.sh/hook: pre-install,post-install
  name: check
  namespace: shop
spec:
  template:
    spec:
      containers:
      - image: busybox:1.36
        name: c
      restartPolicy: Never
`
	if diff := cmp.Diff(wantJob, string(b)); diff != "" {
		t.Errorf("the hook's file (-want +got):\n%s", diff)
	}
}
