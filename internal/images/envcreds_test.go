package images_test

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"

	"github.com/ferry-ci/ferry/internal/images"
)

func TestEnvCredentials(t *testing.T) {
	dir := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte("docker-user:docker-pass"))
	cfg := `{"auths": {"https://charts.example.com": {"auth": "` + auth + `"}, "127.0.0.1:5000": {"username": "u5000", "password": "p5000"}}}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"DOCKER_CONFIG":                    dir,
		"FERRY_SECRET_CHART_AUTH_USERNAME": "ref-user",
		"FERRY_SECRET_CHART_AUTH_PASSWORD": "ref-pass",
		"FERRY_REGISTRY_GHCR_IO_USERNAME":  "gh-user",
		"FERRY_REGISTRY_GHCR_IO_PASSWORD":  "gh-pass",
		// The variable wins over the Docker config for the same host.
		"FERRY_REGISTRY_127_0_0_1_5000_USERNAME": "env5000",
		"FERRY_REGISTRY_127_0_0_1_5000_PASSWORD": "envpass",
	}
	c := images.NewEnvCredentials(func(k string) string { return env[k] })

	if b, ok := c.Secret("chart-auth"); !ok || b.Username != "ref-user" || b.Password != "ref-pass" {
		t.Errorf("Secret(chart-auth) = %+v, %v", b, ok)
	}
	if _, ok := c.Secret("other"); ok {
		t.Error("Secret(other) found credentials that were never set")
	}
	for host, want := range map[string]string{
		"ghcr.io":            "gh-user:gh-pass",
		"charts.example.com": "docker-user:docker-pass",
		"127.0.0.1:5000":     "env5000:envpass",
		"quay.io":            "",
	} {
		b, ok, err := c.Registry(host)
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
}

func TestEnvCredentialsBadDockerConfig(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"auths": {"h": {"auth": "bm90LWJhc2U2NA-secretish"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c := images.NewEnvCredentials(func(k string) string { return map[string]string{"DOCKER_CONFIG": dir}[k] })
	if _, _, err := c.Registry("h"); err == nil {
		t.Fatal("a config.json whose auth is not base64 was accepted")
	}
}
