package images_test

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ferry-ci/ferry/internal/images"
)

func TestEnvCredentials(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte("docker-user:docker-pass"))
	cfg := `{"auths": {"https://charts.example.com": {"auth": "` + auth + `"}, "127.0.0.1:5000": {"username": "u5000", "password": "p5000"}}}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"DOCKER_CONFIG":                     dir,
		"FERRY_SECRET_CHART__AUTH_USERNAME": "ref-user",
		"FERRY_SECRET_CHART__AUTH_PASSWORD": "ref-pass",
		"FERRY_REGISTRY_GHCR_IO_USERNAME":   "gh-user",
		"FERRY_REGISTRY_GHCR_IO_PASSWORD":   "gh-pass",
		// The variable wins over the Docker config for the same host.
		"FERRY_REGISTRY_127_0_0_1___5000_USERNAME": "env5000",
		"FERRY_REGISTRY_127_0_0_1___5000_PASSWORD": "envpass",
	}
	c := images.NewEnvCredentials(func(k string) string { return env[k] })

	if b, ok := c.Secret("chart-auth", nil); !ok || b.Username != "ref-user" || b.Password != "ref-pass" {
		t.Errorf("Secret(chart-auth) = %+v, %v", b, ok)
	}
	if _, ok := c.Secret("other", nil); ok {
		t.Error("Secret(other) found credentials that were never set")
	}
	for host, want := range map[string]string{
		"ghcr.io":            "gh-user:gh-pass",
		"GHCR.io":            "gh-user:gh-pass",
		"charts.example.com": "docker-user:docker-pass",
		"127.0.0.1:5000":     "env5000:envpass",
		"quay.io":            "",
	} {
		b, ok, err := c.Registry(host, nil)
		if err != nil {
			t.Fatalf("Registry(%s): %v", host, err)
		}
		got := ""
		if ok {
			got = b.Username + ":" + b.Password
		}
		if got != want {
			t.Errorf("Registry(%s) = %q, want %q", host, got, want)
		}
	}
	if w := c.Warnings(); len(w) != 0 {
		t.Errorf("warnings %q, want none", w)
	}
}

// The variables of the former spelling (every other character than a
// letter or digit "_") are read for a name whose spelling changed only
// while no other name the run knows spells the same way, with a warning
// either way; today's spelling wins over them.
func TestEnvCredentialsFormerSpelling(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		env      map[string]string
		host     string
		known    []string
		want     string // user:password, "" for none
		warnings []string
	}{
		{name: "former spelling, unambiguous", host: "my-registry.io", known: []string{"my-registry.io", "ghcr.io"},
			env:      map[string]string{"FERRY_REGISTRY_MY_REGISTRY_IO_USERNAME": "u", "FERRY_REGISTRY_MY_REGISTRY_IO_PASSWORD": "p"},
			want:     "u:p",
			warnings: []string{"FERRY_REGISTRY_MY_REGISTRY_IO_USERNAME and _PASSWORD are the former spelling for host my-registry.io, read while no other host spells the same way; rename them FERRY_REGISTRY_MY__REGISTRY_IO_USERNAME and _PASSWORD"}},
		{name: "former spelling of a port", host: "127.0.0.1:5000",
			env:      map[string]string{"FERRY_REGISTRY_127_0_0_1_5000_USERNAME": "u", "FERRY_REGISTRY_127_0_0_1_5000_PASSWORD": "p"},
			want:     "u:p",
			warnings: []string{"FERRY_REGISTRY_127_0_0_1_5000_USERNAME and _PASSWORD are the former spelling for host 127.0.0.1:5000, read while no other host spells the same way; rename them FERRY_REGISTRY_127_0_0_1___5000_USERNAME and _PASSWORD"}},
		{name: "charts.example.com's variables are not charts-example.com's", host: "charts-example.com", known: []string{"charts.example.com", "charts-example.com"},
			env:      map[string]string{"FERRY_REGISTRY_CHARTS_EXAMPLE_COM_USERNAME": "u", "FERRY_REGISTRY_CHARTS_EXAMPLE_COM_PASSWORD": "p"},
			warnings: []string{"FERRY_REGISTRY_CHARTS_EXAMPLE_COM_USERNAME is not read for host charts-example.com: that former spelling also stands for host charts.example.com; name the variables of charts-example.com FERRY_REGISTRY_CHARTS__EXAMPLE_COM_USERNAME and _PASSWORD"}},
		{name: "two hosts of one former spelling", host: "a-b.io:5000", known: []string{"a.b-io:5000"},
			env:      map[string]string{"FERRY_REGISTRY_A_B_IO_5000_USERNAME": "u", "FERRY_REGISTRY_A_B_IO_5000_PASSWORD": "p"},
			warnings: []string{"FERRY_REGISTRY_A_B_IO_5000_USERNAME is not read for host a-b.io:5000: that former spelling also stands for host a.b-io:5000; name the variables of a-b.io:5000 FERRY_REGISTRY_A__B_IO___5000_USERNAME and _PASSWORD"}},
		{name: "today's spelling wins", host: "my-registry.io",
			env:  map[string]string{"FERRY_REGISTRY_MY__REGISTRY_IO_USERNAME": "new", "FERRY_REGISTRY_MY__REGISTRY_IO_PASSWORD": "p", "FERRY_REGISTRY_MY_REGISTRY_IO_USERNAME": "old"},
			want: "new:p"},
		{name: "a spelling that did not change", host: "charts.example.com", known: []string{"charts-example.com"},
			env:  map[string]string{"FERRY_REGISTRY_CHARTS_EXAMPLE_COM_USERNAME": "u", "FERRY_REGISTRY_CHARTS_EXAMPLE_COM_PASSWORD": "p"},
			want: "u:p"},
		{name: "a host with no spelling", host: "[::1]:5000",
			env: map[string]string{"FERRY_REGISTRY____1__5000_USERNAME": "u", "FERRY_REGISTRY_____1___5000_USERNAME": "u"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.env["DOCKER_CONFIG"] = t.TempDir()
			c := images.NewEnvCredentials(func(k string) string { return tc.env[k] })
			b, ok, err := c.Registry(tc.host, func() []string { return tc.known })
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if ok {
				got = b.Username + ":" + b.Password
			}
			if got != tc.want {
				t.Errorf("credentials %q, want %q", got, tc.want)
			}
			if d := cmp.Diff(tc.warnings, c.Warnings()); d != "" {
				t.Errorf("warnings (-want +got):\n%s", d)
			}
		})
	}
	t.Run("Secret names", func(t *testing.T) {
		t.Parallel()
		env := map[string]string{"FERRY_SECRET_REG_CRED_USERNAME": "u", "FERRY_SECRET_REG_CRED_PASSWORD": "p"}
		c := images.NewEnvCredentials(func(k string) string { return env[k] })
		if _, ok := c.Secret("reg-cred", func() []string { return []string{"reg.cred", "reg-cred"} }); ok {
			t.Error("read the former spelling of reg-cred though reg.cred spells the same way")
		}
		if b, ok := c.Secret("reg-cred", func() []string { return []string{"reg-cred", "other"} }); !ok || b.Username != "u" {
			t.Errorf("Secret(reg-cred) = %+v, %v; want the former spelling read", b, ok)
		}
		if n := len(c.Warnings()); n != 2 {
			t.Errorf("%d warnings, want 2: %q", n, c.Warnings())
		}
	})
}

// The former spelling is not looked at, and the names the run knows are
// not asked for, when today's spelling is set or the former one is not.
func TestEnvCredentialsKnownAskedLazily(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DOCKER_CONFIG": t.TempDir(), "FERRY_REGISTRY_A__B_IO_USERNAME": "u"}
	c := images.NewEnvCredentials(func(k string) string { return env[k] })
	asked := 0
	known := func() []string { asked++; return nil }
	for _, h := range []string{"a-b.io", "c-d.io"} {
		if _, _, err := c.Registry(h, known); err != nil {
			t.Fatal(err)
		}
	}
	if asked != 0 {
		t.Errorf("known names asked for %d times, want 0", asked)
	}
}

func TestEnvCredentialsBadDockerConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"auths": {"h": {"auth": "bm90LWJhc2U2NA-secretish"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c := images.NewEnvCredentials(func(k string) string { return map[string]string{"DOCKER_CONFIG": dir}[k] })
	if _, _, err := c.Registry("h", nil); err == nil {
		t.Fatal("a config.json whose auth is not base64 was accepted")
	}
}
