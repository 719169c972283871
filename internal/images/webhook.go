package images

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// ParseWebhook reads a registry push event and returns the image
// repositories it is about, canonical (ghcr.io/org/app,
// index.docker.io/library/nginx), sorted and without repeats. It reads:
//
//   - Harbor's webhook JSON (PUSH_ARTIFACT, event_data.resources[].resource_url),
//     and its CloudEvents form (data instead of event_data);
//   - a GitHub repository_dispatch event, or its client_payload alone,
//     naming the image as "image" (a string) or "images" (a list); a tag or
//     digest on the name is ignored.
func ParseWebhook(data []byte) ([]string, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("webhook payload: not a JSON object: %v", err)
	}
	var refs []string
	var err error
	switch {
	case top["event_data"] != nil:
		refs, err = harborImages(top["event_data"])
	case top["data"] != nil && strings.HasPrefix(jsonString(top["type"]), "harbor."):
		refs, err = harborImages(top["data"])
	case top["client_payload"] != nil:
		refs, err = dispatchImages(top["client_payload"])
	default:
		refs, err = dispatchImages(data)
	}
	if err != nil {
		return nil, fmt.Errorf("webhook payload: %w", err)
	}
	seen := map[string]bool{}
	var out []string
	for _, r := range refs {
		repo, err := repositoryOf(r)
		if err != nil {
			return nil, fmt.Errorf("webhook payload: image %q: %v", r, err)
		}
		if !seen[repo] {
			seen[repo] = true
			out = append(out, repo)
		}
	}
	sort.Strings(out)
	return out, nil
}

func jsonString(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

func harborImages(raw json.RawMessage) ([]string, error) {
	var ev struct {
		Resources []struct {
			ResourceURL string `json:"resource_url"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, fmt.Errorf("harbor event: %v", err)
	}
	var out []string
	for _, r := range ev.Resources {
		if r.ResourceURL != "" {
			out = append(out, r.ResourceURL)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("harbor event names no resource_url")
	}
	return out, nil
}

func dispatchImages(raw json.RawMessage) ([]string, error) {
	var p struct {
		Image  json.RawMessage `json:"image"`
		Images []string        `json:"images"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("client_payload: %v", err)
	}
	out := append([]string(nil), p.Images...)
	if p.Image != nil {
		var s string
		if err := json.Unmarshal(p.Image, &s); err != nil {
			return nil, errors.New(`client_payload: "image" must be a string`)
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, errors.New(`names no image: want {"image": "REGISTRY/REPOSITORY"} or {"images": [...]}, as a repository_dispatch client_payload or a Harbor push event`)
	}
	return out, nil
}

// repositoryOf returns the canonical repository of an image reference,
// with or without a tag or digest.
func repositoryOf(ref string) (string, error) {
	r, err := name.ParseReference(strings.TrimSpace(ref))
	if err != nil {
		return "", err
	}
	return r.Context().Name(), nil
}

// ForImages returns the policies that scan one of the given image
// repositories (as ParseWebhook returns them), in their order.
func ForImages(policies []*Policy, images []string) []*Policy {
	want := map[string]bool{}
	for _, i := range images {
		if r, err := repositoryOf(i); err == nil {
			want[r] = true
		}
	}
	var out []*Policy
	for _, p := range policies {
		if r, err := name.NewRepository(p.Image); err == nil && want[r.Name()] {
			out = append(out, p)
		}
	}
	return out
}
