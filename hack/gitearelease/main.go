// Command gitearelease publishes a release on a Gitea instance with files
// attached, through Gitea's API: the release of an existing tag
// (POST /api/v1/repos/{owner}/{repo}/releases, or the one already made for
// that tag) and each file as an attachment
// (POST /api/v1/repos/{owner}/{repo}/releases/{id}/assets), replacing an
// attachment of the same name, so that a re-run of the release job ends
// with one copy of each file. .gitea/workflows/release.yaml runs it; the
// standard library only, so that the job needs nothing but Go.
//
//	GITEA_TOKEN=… go run ./hack/gitearelease --api URL --repo OWNER/NAME --tag vX.Y.Z [--title T] [--notes-file F] [--prerelease] FILE...
//
// The token comes from GITEA_TOKEN, never from the command line. Prints
// the release's page and each file attached. Exit 2 on any error.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv("GITEA_TOKEN"), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "gitearelease:", err)
		os.Exit(2)
	}
}

// options are the command line's.
type options struct {
	api, owner, repo, tag, title, notes string
	prerelease                          bool
	files                               []string
}

func parse(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("gitearelease", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.api, "api", "", "Gitea's API URL (https://HOST/api/v1)")
	repo := fs.String("repo", "", "OWNER/NAME")
	fs.StringVar(&o.tag, "tag", "", "the release's tag (it must exist)")
	fs.StringVar(&o.title, "title", "", "the release's title (default: the tag)")
	notes := fs.String("notes-file", "", "file holding the release's notes (Markdown)")
	fs.BoolVar(&o.prerelease, "prerelease", false, "mark the release a pre-release")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.files = fs.Args()
	var ok bool
	o.owner, o.repo, ok = strings.Cut(*repo, "/")
	switch {
	case o.api == "":
		return o, errors.New("--api is required")
	case !ok || o.owner == "" || o.repo == "" || strings.Contains(o.repo, "/"):
		return o, fmt.Errorf("--repo %q: want OWNER/NAME", *repo)
	case o.tag == "":
		return o, errors.New("--tag is required")
	case len(o.files) == 0:
		return o, errors.New("no files to attach")
	}
	if u, err := url.Parse(o.api); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return o, fmt.Errorf("--api %q: not an http(s) URL", o.api)
	}
	o.api = strings.TrimSuffix(o.api, "/")
	if o.title == "" {
		o.title = o.tag
	}
	if *notes != "" {
		b, err := os.ReadFile(*notes)
		if err != nil {
			return o, fmt.Errorf("--notes-file: %w", err)
		}
		o.notes = string(b)
	}
	seen := map[string]string{}
	for _, f := range o.files {
		st, err := os.Stat(f)
		if err != nil {
			return o, err
		}
		if !st.Mode().IsRegular() {
			return o, fmt.Errorf("%s: not a regular file", f)
		}
		if other, dup := seen[filepath.Base(f)]; dup {
			return o, fmt.Errorf("%s and %s: two attachments named %s", other, f, filepath.Base(f))
		}
		seen[filepath.Base(f)] = f
	}
	return o, nil
}

func run(ctx context.Context, args []string, token string, stdout io.Writer) error {
	o, err := parse(args)
	if err != nil {
		return err
	}
	if token == "" {
		return errors.New("GITEA_TOKEN is empty: the job's token (secrets.GITHUB_TOKEN) or a token that may write releases")
	}
	c := &client{api: o.api, token: token, http: &http.Client{Timeout: 10 * time.Minute}}
	rel, err := c.release(ctx, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "release %s: %s\n", o.tag, rel.HTMLURL)
	for _, f := range o.files {
		name := filepath.Base(f)
		for _, a := range rel.Assets {
			if a.Name == name {
				if err := c.do(ctx, http.MethodDelete, fmt.Sprintf("/repos/%s/%s/releases/%d/assets/%d", c.path(o.owner), c.path(o.repo), rel.ID, a.ID), nil, "", nil); err != nil {
					return fmt.Errorf("replacing %s: %w", name, err)
				}
			}
		}
		var a asset
		if err := c.upload(ctx, fmt.Sprintf("/repos/%s/%s/releases/%d/assets?name=%s", c.path(o.owner), c.path(o.repo), rel.ID, url.QueryEscape(name)), f, &a); err != nil {
			return fmt.Errorf("attaching %s: %w", f, err)
		}
		fmt.Fprintf(stdout, "attached %s (%d bytes)\n", a.Name, a.Size)
	}
	return nil
}

type release struct {
	ID      int64   `json:"id"`
	HTMLURL string  `json:"html_url"`
	Assets  []asset `json:"assets"`
}

type asset struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	Size int64  `json:"size"`
}

// release returns the tag's release, made unless it exists (a re-run).
func (c *client) release(ctx context.Context, o options) (release, error) {
	var rel release
	err := c.do(ctx, http.MethodGet, fmt.Sprintf("/repos/%s/%s/releases/tags/%s", c.path(o.owner), c.path(o.repo), c.path(o.tag)), nil, "", &rel)
	var se *statusError
	switch {
	case err == nil:
		return rel, nil
	case !errors.As(err, &se) || se.code != http.StatusNotFound:
		return rel, fmt.Errorf("looking up the release of %s: %w", o.tag, err)
	}
	body, _ := json.Marshal(map[string]any{
		"tag_name":   o.tag,
		"name":       o.title,
		"body":       o.notes,
		"draft":      false,
		"prerelease": o.prerelease,
	})
	if err := c.do(ctx, http.MethodPost, fmt.Sprintf("/repos/%s/%s/releases", c.path(o.owner), c.path(o.repo)), bytes.NewReader(body), "application/json", &rel); err != nil {
		return rel, fmt.Errorf("creating the release of %s: %w", o.tag, err)
	}
	return rel, nil
}

type client struct {
	api, token string
	http       *http.Client
}

func (c *client) path(s string) string { return url.PathEscape(s) }

type statusError struct {
	method, url string
	code        int
	body        string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s %s: %d %s", e.method, e.url, e.code, strings.TrimSpace(e.body))
}

func (c *client) do(ctx context.Context, method, path string, body io.Reader, contentType string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.api+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "token "+c.token)
	req.Header.Set("Accept", "application/json")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", method, c.api+path, err)
	}
	if resp.StatusCode/100 != 2 {
		return &statusError{method: method, url: c.api + path, code: resp.StatusCode, body: string(b)}
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: %w", method, c.api+path, err)
		}
	}
	return nil
}

// upload posts the file as the multipart form Gitea takes (its field
// "attachment"), streamed.
func (c *client) upload(ctx context.Context, path, file string, out any) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		part, err := mw.CreateFormFile("attachment", filepath.Base(file))
		if err == nil {
			_, err = io.Copy(part, f)
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	err = c.do(ctx, http.MethodPost, path, pr, mw.FormDataContentType(), out)
	pr.CloseWithError(errors.New("request finished"))
	return err
}
