package githubtest

import (
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The JSON below follows GitHub's REST API reference (version 2022-11-28):
// https://docs.github.com/rest/issues, /rest/pulls, /rest/users and
// /rest/commits/statuses. Only the
// fields a client may read are served; their names and types are GitHub's.

type userJSON struct {
	Login     string `json:"login"`
	ID        int64  `json:"id"`
	NodeID    string `json:"node_id"`
	AvatarURL string `json:"avatar_url"`
	URL       string `json:"url"`
	HTMLURL   string `json:"html_url"`
	Type      string `json:"type"`
	SiteAdmin bool   `json:"site_admin"`
}

type labelJSON struct {
	ID          int64   `json:"id"`
	NodeID      string  `json:"node_id"`
	URL         string  `json:"url"`
	Name        string  `json:"name"`
	Color       string  `json:"color"`
	Default     bool    `json:"default"`
	Description *string `json:"description"`
}

type commentJSON struct {
	ID                int64     `json:"id"`
	NodeID            string    `json:"node_id"`
	URL               string    `json:"url"`
	HTMLURL           string    `json:"html_url"`
	IssueURL          string    `json:"issue_url"`
	Body              string    `json:"body"`
	User              userJSON  `json:"user"`
	CreatedAt         time.Time `json:"created_at"`
	UpdatedAt         time.Time `json:"updated_at"`
	AuthorAssociation string    `json:"author_association"`
}

type pullLinksJSON struct {
	URL      string     `json:"url"`
	HTMLURL  string     `json:"html_url"`
	DiffURL  string     `json:"diff_url"`
	PatchURL string     `json:"patch_url"`
	MergedAt *time.Time `json:"merged_at"`
}

type issueJSON struct {
	ID                int64          `json:"id"`
	NodeID            string         `json:"node_id"`
	URL               string         `json:"url"`
	RepositoryURL     string         `json:"repository_url"`
	LabelsURL         string         `json:"labels_url"`
	CommentsURL       string         `json:"comments_url"`
	EventsURL         string         `json:"events_url"`
	HTMLURL           string         `json:"html_url"`
	Number            int            `json:"number"`
	State             string         `json:"state"`
	StateReason       *string        `json:"state_reason"`
	Title             string         `json:"title"`
	Body              *string        `json:"body"`
	User              userJSON       `json:"user"`
	Labels            []labelJSON    `json:"labels"`
	Assignee          *userJSON      `json:"assignee"`
	Assignees         []userJSON     `json:"assignees"`
	Milestone         any            `json:"milestone"`
	Locked            bool           `json:"locked"`
	ActiveLockReason  *string        `json:"active_lock_reason"`
	Comments          int            `json:"comments"`
	PullRequest       *pullLinksJSON `json:"pull_request,omitempty"`
	ClosedAt          *time.Time     `json:"closed_at"`
	CreatedAt         time.Time      `json:"created_at"`
	UpdatedAt         time.Time      `json:"updated_at"`
	AuthorAssociation string         `json:"author_association"`
}

type repoJSON struct {
	ID            int64    `json:"id"`
	NodeID        string   `json:"node_id"`
	Name          string   `json:"name"`
	FullName      string   `json:"full_name"`
	Owner         userJSON `json:"owner"`
	Private       bool     `json:"private"`
	HTMLURL       string   `json:"html_url"`
	URL           string   `json:"url"`
	Fork          bool     `json:"fork"`
	DefaultBranch string   `json:"default_branch"`
}

type branchJSON struct {
	Label string   `json:"label"`
	Ref   string   `json:"ref"`
	SHA   string   `json:"sha"`
	User  userJSON `json:"user"`
	Repo  repoJSON `json:"repo"`
}

type pullJSON struct {
	URL                string      `json:"url"`
	ID                 int64       `json:"id"`
	NodeID             string      `json:"node_id"`
	HTMLURL            string      `json:"html_url"`
	DiffURL            string      `json:"diff_url"`
	PatchURL           string      `json:"patch_url"`
	IssueURL           string      `json:"issue_url"`
	CommitsURL         string      `json:"commits_url"`
	CommentsURL        string      `json:"comments_url"`
	Number             int         `json:"number"`
	State              string      `json:"state"`
	Locked             bool        `json:"locked"`
	Title              string      `json:"title"`
	User               userJSON    `json:"user"`
	Body               *string     `json:"body"`
	Labels             []labelJSON `json:"labels"`
	Milestone          any         `json:"milestone"`
	ActiveLockReason   *string     `json:"active_lock_reason"`
	CreatedAt          time.Time   `json:"created_at"`
	UpdatedAt          time.Time   `json:"updated_at"`
	ClosedAt           *time.Time  `json:"closed_at"`
	MergedAt           *time.Time  `json:"merged_at"`
	MergeCommitSHA     *string     `json:"merge_commit_sha"`
	Assignee           *userJSON   `json:"assignee"`
	Assignees          []userJSON  `json:"assignees"`
	RequestedReviewers []userJSON  `json:"requested_reviewers"`
	Head               branchJSON  `json:"head"`
	Base               branchJSON  `json:"base"`
	AuthorAssociation  string      `json:"author_association"`
	Draft              bool        `json:"draft"`
	Merged             bool        `json:"merged"`
}

type statusJSON struct {
	URL         string    `json:"url"`
	AvatarURL   *string   `json:"avatar_url"`
	ID          int64     `json:"id"`
	NodeID      string    `json:"node_id"`
	State       string    `json:"state"`
	Description *string   `json:"description"`
	TargetURL   *string   `json:"target_url"`
	Context     string    `json:"context"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	Creator     *userJSON `json:"creator"`
}

// errorJSON is GitHub's client error body.
type errorJSON struct {
	Message          string       `json:"message"`
	Errors           []fieldError `json:"errors,omitempty"`
	DocumentationURL string       `json:"documentation_url"`
	Status           string       `json:"status"`
}

type fieldError struct {
	Resource string `json:"resource"`
	Code     string `json:"code"`
	Field    string `json:"field,omitempty"`
	Message  string `json:"message,omitempty"`
}

const docs = "https://docs.github.com/rest"

type ctxKey struct{}

// call is one request being answered.
type call struct {
	w    http.ResponseWriter
	r    *http.Request
	user *User
	base string // API base URL of this request (with /api/v3/ when used)
	body []byte
}

func (c *call) json(status int, v any) {
	c.w.Header().Set("Content-Type", "application/json; charset=utf-8")
	c.w.Header().Set("X-GitHub-Media-Type", "github.v3; format=json")
	c.w.WriteHeader(status)
	enc := json.NewEncoder(c.w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func (c *call) fail(status int, msg, doc string, errs ...fieldError) {
	c.json(status, errorJSON{Message: msg, Errors: errs, DocumentationURL: doc, Status: strconv.Itoa(status)})
}

func (c *call) notFound() { c.fail(http.StatusNotFound, "Not Found", docs) }

func (c *call) invalid(doc string, errs ...fieldError) {
	c.fail(http.StatusUnprocessableEntity, "Validation Failed", doc, errs...)
}

// created answers a request that made v, found at url.
func (c *call) created(url string, v any) {
	c.w.Header().Set("Location", url)
	c.json(http.StatusCreated, v)
}

func (c *call) decode(v any) bool {
	if err := json.Unmarshal(c.body, v); err != nil {
		c.fail(http.StatusBadRequest, "Problems parsing JSON", docs)
		return false
	}
	return true
}

type recorder struct {
	http.ResponseWriter
	status int
}

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (s *Server) handler() http.Handler {
	mux := http.NewServeMux()
	route := func(pattern string, h func(*call)) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			c := r.Context().Value(ctxKey{}).(*call)
			c.r = r     // the mux's copy, holding the path values
			s.mu.Lock() // every handler reads or changes the server's state
			defer s.mu.Unlock()
			h(c)
		})
	}
	route("GET /user", s.getUser)
	route("GET /repos/{owner}/{repo}/issues/{number}/comments", s.listComments)
	route("POST /repos/{owner}/{repo}/issues/{number}/comments", s.createComment)
	route("PATCH /repos/{owner}/{repo}/issues/comments/{id}", s.editComment)
	route("DELETE /repos/{owner}/{repo}/issues/comments/{id}", s.deleteComment)
	route("GET /repos/{owner}/{repo}/pulls", s.listPulls)
	route("POST /repos/{owner}/{repo}/pulls", s.createPull)
	route("GET /repos/{owner}/{repo}/pulls/{number}", s.getPull)
	route("PATCH /repos/{owner}/{repo}/pulls/{number}", s.editPull)
	route("GET /repos/{owner}/{repo}/issues", s.listIssues)
	route("POST /repos/{owner}/{repo}/issues", s.createIssue)
	route("GET /repos/{owner}/{repo}/issues/{number}", s.getIssue)
	route("PATCH /repos/{owner}/{repo}/issues/{number}", s.editIssue)
	route("GET /repos/{owner}/{repo}/issues/{number}/labels", s.listIssueLabels)
	route("POST /repos/{owner}/{repo}/issues/{number}/labels", s.addIssueLabels)
	route("DELETE /repos/{owner}/{repo}/issues/{number}/labels/{name}", s.removeIssueLabel)
	route("GET /repos/{owner}/{repo}/commits/{ref}/statuses", s.listStatuses)
	route("GET /repos/{owner}/{repo}/branches", s.listBranches)
	route("GET /repos/{owner}/{repo}/tags", s.listTags)
	route("POST /repos/{owner}/{repo}/statuses/{sha}", s.createStatus)
	route("/", func(c *call) { c.notFound() })

	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		rec := &recorder{ResponseWriter: w}
		c := &call{w: rec, r: r, body: body, base: s.srv.URL + "/"}
		if p, ok := strings.CutPrefix(r.URL.Path, "/api/v3/"); ok {
			r.URL.Path = "/" + p
			// Keep what the client escaped (a "/" in a label name).
			raw, ok := strings.CutPrefix(r.URL.RawPath, "/api/v3/")
			r.URL.RawPath = ""
			if ok {
				r.URL.RawPath = "/" + raw
			}
			c.base = s.srv.URL + "/api/v3/"
		}
		s.mu.Lock()
		c.user = s.users[bearer(r.Header.Get("Authorization"))]
		s.mu.Unlock()

		switch {
		case r.Header.Get("Authorization") == "":
			c.fail(http.StatusUnauthorized, "Requires authentication", docs)
		case c.user == nil:
			c.fail(http.StatusUnauthorized, "Bad credentials", docs)
		case c.user.ReadOnly && r.Method != http.MethodGet && r.Method != http.MethodHead:
			c.fail(http.StatusForbidden, "Resource not accessible by integration", docs)
		default:
			mux.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), ctxKey{}, c)))
		}

		login := ""
		if c.user != nil {
			login = c.user.Login
		}
		s.mu.Lock()
		s.requests = append(s.requests, Request{
			Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
			User: login, Status: rec.status, Body: string(body),
		})
		s.mu.Unlock()
	})
}

// bearer returns the token of an Authorization header, "Bearer <token>"
// or "token <token>" as GitHub accepts both.
func bearer(h string) string {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok {
		return ""
	}
	switch strings.ToLower(scheme) {
	case "bearer", "token":
		return strings.TrimSpace(tok)
	}
	return ""
}

func (s *Server) getUser(c *call) {
	c.json(http.StatusOK, s.userJSON(c.base, c.user.Login))
}

// target resolves {owner}/{repo} and, when the route has one, {number}.
func (s *Server) target(c *call) (*repo, *Issue, bool) {
	r := s.repo(c.r.PathValue("owner"), c.r.PathValue("repo"))
	if r == nil {
		c.notFound()
		return nil, nil, false
	}
	if c.r.PathValue("number") == "" {
		return r, nil, true
	}
	n, err := strconv.Atoi(c.r.PathValue("number"))
	if err != nil || n < 1 || n > len(r.issues) {
		c.notFound()
		return nil, nil, false
	}
	return r, r.issues[n-1], true
}

func (s *Server) listComments(c *call) {
	r, is, ok := s.target(c)
	if !ok {
		return
	}
	var all []*Comment
	for _, cm := range r.comments {
		if cm.Number == is.Number {
			all = append(all, cm)
		}
	}
	page(s, c, all, func(cm *Comment) commentJSON { return s.commentJSON(c.base, r, cm) })
}

const (
	docCreateComment = docs + "/issues/comments#create-an-issue-comment"
	docUpdateComment = docs + "/issues/comments#update-an-issue-comment"
	docCreateIssue   = docs + "/issues/issues#create-an-issue"
	docUpdateIssue   = docs + "/issues/issues#update-an-issue"
	docCreatePull    = docs + "/pulls/pulls#create-a-pull-request"
	docUpdatePull    = docs + "/pulls/pulls#update-a-pull-request"
)

// checkBody enforces GitHub's length limit on a body.
func checkBody(c *call, resource, doc string, body string) bool {
	if utf8.RuneCountInString(body) > MaxBody {
		c.invalid(doc, fieldError{Resource: resource, Code: "custom", Field: "body",
			Message: fmt.Sprintf("body is too long (maximum is %d characters)", MaxBody)})
		return false
	}
	return true
}

// commentBody reads the body of a comment being created or edited, which
// GitHub wants present, not empty and within its limit.
func commentBody(c *call, doc string) (string, bool) {
	var in struct {
		Body *string `json:"body"`
	}
	if !c.decode(&in) {
		return "", false
	}
	if in.Body == nil || *in.Body == "" {
		c.invalid(doc, fieldError{Resource: "IssueComment", Code: "missing_field", Field: "body"})
		return "", false
	}
	return *in.Body, checkBody(c, "IssueComment", doc, *in.Body)
}

func (s *Server) createComment(c *call) {
	r, is, ok := s.target(c)
	if !ok {
		return
	}
	body, ok := commentBody(c, docCreateComment)
	if !ok {
		return
	}
	out := s.commentJSON(c.base, r, s.newComment(r, is.Number, c.user.Login, body))
	c.created(out.URL, out)
}

// pull resolves {owner}/{repo} and {number}, which must be a pull request.
func (s *Server) pull(c *call) (*repo, *Issue, bool) {
	r, is, ok := s.target(c)
	if ok && is.PullRequest == nil {
		c.notFound()
		return nil, nil, false
	}
	return r, is, ok
}

func (s *Server) comment(c *call) (*repo, *Comment, bool) {
	r, _, ok := s.target(c)
	if !ok {
		return nil, nil, false
	}
	id, err := strconv.ParseInt(c.r.PathValue("id"), 10, 64)
	if err == nil {
		for _, cm := range r.comments {
			if cm.ID == id {
				return r, cm, true
			}
		}
	}
	c.notFound()
	return nil, nil, false
}

func (s *Server) editComment(c *call) {
	r, cm, ok := s.comment(c)
	if !ok {
		return
	}
	body, ok := commentBody(c, docUpdateComment)
	if !ok {
		return
	}
	cm.Body = body
	cm.Updated = s.tick()
	c.json(http.StatusOK, s.commentJSON(c.base, r, cm))
}

func (s *Server) deleteComment(c *call) {
	r, cm, ok := s.comment(c)
	if !ok {
		return
	}
	r.comments = slices.DeleteFunc(r.comments, func(x *Comment) bool { return x == cm })
	c.w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listPulls(c *call) {
	r, _, ok := s.target(c)
	if !ok {
		return
	}
	q := c.r.URL.Query()
	state := cmp.Or(q.Get("state"), "open")
	headOwner, headRef := "", q.Get("head")
	if o, ref, found := strings.Cut(headRef, ":"); found {
		headOwner, headRef = o, ref
	}
	var all []*Issue
	for _, is := range r.issues {
		switch {
		case is.PullRequest == nil,
			state != "all" && is.State != state,
			headRef != "" && is.PullRequest.Head != headRef,
			headOwner != "" && !strings.EqualFold(headOwner, r.owner),
			q.Get("base") != "" && is.PullRequest.Base != q.Get("base"):
			continue
		}
		all = append(all, is)
	}
	sortIssues(all, q.Get("sort"), q.Get("direction"))
	page(s, c, all, func(is *Issue) pullJSON { return s.pullJSON(c.base, r, is) })
}

func (s *Server) getPull(c *call) {
	r, is, ok := s.pull(c)
	if !ok {
		return
	}
	c.json(http.StatusOK, s.pullJSON(c.base, r, is))
}

func (s *Server) createPull(c *call) {
	r, _, ok := s.target(c)
	if !ok {
		return
	}
	var in struct {
		Title *string `json:"title"`
		Head  string  `json:"head"`
		Base  string  `json:"base"`
		Body  *string `json:"body"`
		Draft bool    `json:"draft"`
	}
	if !c.decode(&in) {
		return
	}
	head := in.Head
	if _, ref, found := strings.Cut(head, ":"); found {
		head = ref
	}
	var missing []fieldError
	for field, v := range map[string]string{"title": deref(in.Title), "head": head, "base": in.Base} {
		if v == "" {
			missing = append(missing, fieldError{Resource: "PullRequest", Code: "missing_field", Field: field})
		}
	}
	if len(missing) > 0 {
		slices.SortFunc(missing, func(a, b fieldError) int { return strings.Compare(a.Field, b.Field) })
		c.invalid(docCreatePull, missing...)
		return
	}
	if head == in.Base {
		c.invalid(docCreatePull, fieldError{Resource: "PullRequest", Code: "custom",
			Message: fmt.Sprintf("No commits between %s and %s", in.Base, head)})
		return
	}
	if !checkBody(c, "PullRequest", docCreatePull, deref(in.Body)) {
		return
	}
	for _, is := range r.issues {
		if is.PullRequest != nil && is.State == "open" && is.PullRequest.Head == head && is.PullRequest.Base == in.Base {
			c.invalid(docCreatePull, fieldError{Resource: "PullRequest", Code: "custom",
				Message: fmt.Sprintf("A pull request already exists for %s:%s.", r.owner, head)})
			return
		}
	}
	out := s.pullJSON(c.base, r, s.newPull(r, c.user.Login, head, in.Base, *in.Title, deref(in.Body), in.Draft))
	c.created(out.URL, out)
}

func (s *Server) editPull(c *call) {
	r, is, ok := s.pull(c)
	if !ok {
		return
	}
	var in struct {
		Title *string `json:"title"`
		Body  *string `json:"body"`
		State *string `json:"state"`
		Base  *string `json:"base"`
	}
	if !c.decode(&in) {
		return
	}
	if !checkEdit(c, "PullRequest", docUpdatePull, in.Body, in.State) {
		return
	}
	s.apply(is, in.Title, in.Body, in.State)
	if in.Base != nil && *in.Base != "" {
		is.PullRequest.Base = *in.Base
	}
	c.json(http.StatusOK, s.pullJSON(c.base, r, is))
}

// checkEdit checks the body and state an edit of resource sets, when it
// sets them.
func checkEdit(c *call, resource, doc string, body, state *string) bool {
	if body != nil && !checkBody(c, resource, doc, *body) {
		return false
	}
	if state != nil && *state != "open" && *state != "closed" {
		c.invalid(doc, fieldError{Resource: resource, Code: "invalid", Field: "state"})
		return false
	}
	return true
}

func (s *Server) apply(is *Issue, title, body, state *string) {
	now := s.tick()
	if title != nil && *title != "" {
		is.Title = *title
	}
	if body != nil {
		is.Body = *body
	}
	if state != nil && *state != is.State {
		is.State = *state
		if *state == "closed" {
			t := now
			is.ClosedAt = &t
		} else {
			is.ClosedAt = nil
		}
	}
	is.Updated = now
}

func (s *Server) listIssues(c *call) {
	r, _, ok := s.target(c)
	if !ok {
		return
	}
	q := c.r.URL.Query()
	state := cmp.Or(q.Get("state"), "open")
	var labels []string
	if l := q.Get("labels"); l != "" {
		labels = strings.Split(l, ",")
	}
	creator := q.Get("creator")
	var all []*Issue
	for _, is := range r.issues {
		if state != "all" && is.State != state {
			continue
		}
		if creator != "" && !strings.EqualFold(creator, is.Author) {
			continue
		}
		if !slices.ContainsFunc(labels, func(l string) bool { return !hasLabel(is.Labels, strings.TrimSpace(l)) }) {
			all = append(all, is)
		}
	}
	sortIssues(all, q.Get("sort"), q.Get("direction"))
	page(s, c, all, func(is *Issue) issueJSON { return s.issueJSON(c.base, r, is) })
}

func hasLabel(labels []string, want string) bool {
	return slices.ContainsFunc(labels, func(l string) bool { return strings.EqualFold(l, want) })
}

func sortIssues(all []*Issue, by, direction string) {
	key := func(is *Issue) time.Time { return is.Created }
	if by == "updated" {
		key = func(is *Issue) time.Time { return is.Updated }
	}
	desc := direction != "asc"
	slices.SortStableFunc(all, func(a, b *Issue) int {
		if d := key(a).Compare(key(b)); d != 0 {
			if desc {
				return -d
			}
			return d
		}
		if desc {
			return b.Number - a.Number
		}
		return a.Number - b.Number
	})
}

func (s *Server) getIssue(c *call) {
	r, is, ok := s.target(c)
	if !ok {
		return
	}
	c.json(http.StatusOK, s.issueJSON(c.base, r, is))
}

// labelNames reads "labels" as GitHub takes it: names, or objects with a name.
func labelNames(raw []json.RawMessage) ([]string, bool) {
	var out []string
	for _, m := range raw {
		var name string
		if err := json.Unmarshal(m, &name); err != nil {
			var obj struct {
				Name string `json:"name"`
			}
			if err := json.Unmarshal(m, &obj); err != nil || obj.Name == "" {
				return nil, false
			}
			name = obj.Name
		}
		if name != "" && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out, true
}

func (s *Server) createIssue(c *call) {
	r, _, ok := s.target(c)
	if !ok {
		return
	}
	var in struct {
		Title  *string           `json:"title"`
		Body   *string           `json:"body"`
		Labels []json.RawMessage `json:"labels"`
	}
	if !c.decode(&in) {
		return
	}
	if deref(in.Title) == "" {
		c.invalid(docCreateIssue, fieldError{Resource: "Issue", Code: "missing_field", Field: "title"})
		return
	}
	if !checkBody(c, "Issue", docCreateIssue, deref(in.Body)) {
		return
	}
	labels, ok := labelNames(in.Labels)
	if !ok {
		c.invalid(docCreateIssue, fieldError{Resource: "Issue", Code: "invalid", Field: "labels"})
		return
	}
	out := s.issueJSON(c.base, r, s.newIssue(r, c.user.Login, *in.Title, deref(in.Body), labels))
	c.created(out.URL, out)
}

func (s *Server) editIssue(c *call) {
	r, is, ok := s.target(c)
	if !ok {
		return
	}
	var in struct {
		Title       *string            `json:"title"`
		Body        *string            `json:"body"`
		State       *string            `json:"state"`
		StateReason *string            `json:"state_reason"`
		Labels      *[]json.RawMessage `json:"labels"`
	}
	if !c.decode(&in) {
		return
	}
	if !checkEdit(c, "Issue", docUpdateIssue, in.Body, in.State) {
		return
	}
	if in.Labels != nil {
		labels, ok := labelNames(*in.Labels)
		if !ok {
			c.invalid(docUpdateIssue, fieldError{Resource: "Issue", Code: "invalid", Field: "labels"})
			return
		}
		for _, l := range labels {
			s.label(r, l)
		}
		is.Labels = labels
	}
	s.apply(is, in.Title, in.Body, in.State)
	c.json(http.StatusOK, s.issueJSON(c.base, r, is))
}

const (
	docAddLabels   = docs + "/issues/labels#add-labels-to-an-issue"
	docRemoveLabel = docs + "/issues/labels#remove-a-label-from-an-issue"
)

// listIssueLabels lists the labels of an issue or pull request.
func (s *Server) listIssueLabels(c *call) {
	r, is, ok := s.target(c)
	if !ok {
		return
	}
	page(s, c, s.labelsJSON(c.base, r, is.Labels), func(l labelJSON) labelJSON { return l })
}

// addIssueLabels adds labels to an issue or pull request, creating those
// the repository lacks, and answers with all its labels. The body is an
// array of names, {"labels": [...]} with names or {"name": ...} objects,
// or a single name.
func (s *Server) addIssueLabels(c *call) {
	r, is, ok := s.target(c)
	if !ok {
		return
	}
	var raw []json.RawMessage
	var in struct {
		Labels []json.RawMessage `json:"labels"`
	}
	var one string
	switch {
	case json.Unmarshal(c.body, &raw) == nil:
	case json.Unmarshal(c.body, &in) == nil && in.Labels != nil:
		raw = in.Labels
	case json.Unmarshal(c.body, &one) == nil:
		raw = []json.RawMessage{c.body}
	default:
		c.invalid(docAddLabels, fieldError{Resource: "Label", Code: "invalid", Field: "labels"})
		return
	}
	names, ok := labelNames(raw)
	if !ok {
		c.invalid(docAddLabels, fieldError{Resource: "Label", Code: "invalid", Field: "labels"})
		return
	}
	changed := false
	for _, n := range names {
		n = s.labelName(r, n)
		if !slices.Contains(is.Labels, n) {
			is.Labels = append(is.Labels, n)
			changed = true
		}
	}
	if changed {
		is.Updated = s.tick()
	}
	c.json(http.StatusOK, s.labelsJSON(c.base, r, is.Labels))
}

// removeIssueLabel takes a label (named in any case) off an issue or pull
// request and answers with the labels left; 404 when it does not carry it.
func (s *Server) removeIssueLabel(c *call) {
	r, is, ok := s.target(c)
	if !ok {
		return
	}
	name := c.r.PathValue("name")
	i := slices.IndexFunc(is.Labels, func(l string) bool { return strings.EqualFold(l, name) })
	if i < 0 {
		c.fail(http.StatusNotFound, "Label does not exist", docRemoveLabel)
		return
	}
	is.Labels = slices.Delete(is.Labels, i, i+1)
	is.Updated = s.tick()
	c.json(http.StatusOK, s.labelsJSON(c.base, r, is.Labels))
}

const docCreateStatus = docs + "/commits/statuses#create-a-commit-status"

// commitSHA resolves a ref to a commit: a full SHA (the server has no git,
// so any), or the head branch of a pull request.
func commitSHA(r *repo, ref string) (string, bool) {
	if len(ref) == 40 || len(ref) == 64 {
		if _, err := hex.DecodeString(ref); err == nil {
			return strings.ToLower(ref), true
		}
	}
	for i := len(r.issues) - 1; i >= 0; i-- {
		if p := r.issues[i].PullRequest; p != nil && p.Head == ref {
			return p.HeadSHA, true
		}
	}
	return "", false
}

// listStatuses lists the statuses of a ref newest first, as GitHub does.
func (s *Server) listStatuses(c *call) {
	r, _, ok := s.target(c)
	if !ok {
		return
	}
	sha, ok := commitSHA(r, c.r.PathValue("ref"))
	if !ok {
		c.fail(http.StatusNotFound, "No commit found for SHA: "+c.r.PathValue("ref"), docs+"/commits/statuses#list-commit-statuses-for-a-reference")
		return
	}
	var all []*Status
	for i := len(r.statuses) - 1; i >= 0; i-- {
		if r.statuses[i].SHA == sha {
			all = append(all, r.statuses[i])
		}
	}
	page(s, c, all, func(st *Status) statusJSON { return s.statusJSON(c.base, r, st) })
}

func (s *Server) createStatus(c *call) {
	r, _, ok := s.target(c)
	if !ok {
		return
	}
	sha, ok := commitSHA(r, c.r.PathValue("sha"))
	if !ok {
		c.invalid(docCreateStatus, fieldError{Resource: "Status", Code: "custom", Field: "sha",
			Message: "No commit found for SHA: " + c.r.PathValue("sha")})
		return
	}
	var in struct {
		State       string  `json:"state"`
		TargetURL   *string `json:"target_url"`
		Description *string `json:"description"`
		Context     *string `json:"context"`
	}
	if !c.decode(&in) {
		return
	}
	switch in.State {
	case "":
		c.invalid(docCreateStatus, fieldError{Resource: "Status", Code: "missing_field", Field: "state"})
		return
	case "pending", "success", "failure", "error":
	default:
		c.invalid(docCreateStatus, fieldError{Resource: "Status", Code: "custom", Field: "state",
			Message: "state is not included in the list"})
		return
	}
	if utf8.RuneCountInString(deref(in.Description)) > MaxStatusDescription {
		c.invalid(docCreateStatus, fieldError{Resource: "Status", Code: "custom", Field: "description",
			Message: fmt.Sprintf("description is too long (maximum is %d characters)", MaxStatusDescription)})
		return
	}
	st := &Status{
		ID:          s.id(),
		SHA:         sha,
		State:       in.State,
		Context:     cmp.Or(deref(in.Context), "default"),
		Description: deref(in.Description),
		TargetURL:   deref(in.TargetURL),
		Creator:     c.user.Login,
		Created:     s.tick(),
	}
	r.statuses = append(r.statuses, st)
	out := s.statusJSON(c.base, r, st)
	c.created(out.URL, out)
}

type commitRefJSON struct {
	SHA string `json:"sha"`
	URL string `json:"url"`
}

// refJSON is an item of the branches (name, commit, protected) and tags
// (name, commit, zipball_url, tarball_url, node_id) lists.
type refJSON struct {
	Name       string        `json:"name"`
	Commit     commitRefJSON `json:"commit"`
	Protected  *bool         `json:"protected,omitempty"`
	ZipballURL string        `json:"zipball_url,omitempty"`
	TarballURL string        `json:"tarball_url,omitempty"`
	NodeID     string        `json:"node_id,omitempty"`
}

// listBranches lists the branches by name, as GitHub does.
func (s *Server) listBranches(c *call) {
	r, _, ok := s.target(c)
	if !ok {
		return
	}
	names := slices.Sorted(maps.Keys(r.branches))
	page(s, c, names, func(n string) refJSON {
		no := false
		return refJSON{Name: n, Protected: &no, Commit: commitRefJSON{SHA: r.branches[n], URL: fmt.Sprintf("%srepos/%s/%s/commits/%s", c.base, r.owner, r.name, r.branches[n])}}
	})
}

// listTags lists the tags in the order they were added.
func (s *Server) listTags(c *call) {
	r, _, ok := s.target(c)
	if !ok {
		return
	}
	page(s, c, r.tags, func(t Ref) refJSON {
		repo := fmt.Sprintf("%srepos/%s/%s/", c.base, r.owner, r.name)
		return refJSON{Name: t.Name, Commit: commitRefJSON{SHA: t.SHA, URL: repo + "commits/" + t.SHA},
			ZipballURL: repo + "zipball/refs/tags/" + t.Name, TarballURL: repo + "tarball/refs/tags/" + t.Name, NodeID: "REF_" + t.Name}
	})
}

// page answers with the page of all the request asks for, each item as
// render writes it.
func page[T, J any](s *Server, c *call, all []T, render func(T) J) {
	lo, hi := s.paginate(c, len(all))
	out := []J{}
	for _, x := range all[lo:hi] {
		out = append(out, render(x))
	}
	c.json(http.StatusOK, out)
}

// paginate picks the page the request asks for out of n items and sets the
// Link header GitHub sends (next and last, then first and prev).
func (s *Server) paginate(c *call, n int) (lo, hi int) {
	q := c.r.URL.Query()
	per := s.perPage
	if v, err := strconv.Atoi(q.Get("per_page")); err == nil && v > 0 && v < per {
		per = v
	}
	page := 1
	if v, err := strconv.Atoi(q.Get("page")); err == nil && v > 0 {
		page = v
	}
	last := max((n+per-1)/per, 1)
	link := func(p int, rel string) string {
		u := *c.r.URL
		qq := u.Query()
		qq.Set("page", strconv.Itoa(p))
		if q.Get("per_page") != "" {
			qq.Set("per_page", q.Get("per_page"))
		}
		u.RawQuery = qq.Encode()
		base, _ := url.Parse(c.base)
		return fmt.Sprintf("<%s%s?%s>; rel=%q", strings.TrimSuffix(base.String(), "/"), u.Path, u.RawQuery, rel)
	}
	var links []string
	if page < last {
		links = append(links, link(page+1, "next"), link(last, "last"))
	}
	if page > 1 {
		links = append(links, link(1, "first"), link(min(page-1, last), "prev"))
	}
	if len(links) > 0 {
		c.w.Header().Set("Link", strings.Join(links, ", "))
	}
	lo = min((page-1)*per, n)
	hi = min(lo+per, n)
	return lo, hi
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (s *Server) userJSON(base, login string) userJSON {
	id := int64(crc32.ChecksumIEEE([]byte(strings.ToLower(login))))
	if u, ok := s.byLogin[strings.ToLower(login)]; ok {
		login, id = u.Login, u.ID
	}
	return userJSON{
		Login:     login,
		ID:        id,
		NodeID:    fmt.Sprintf("U_kgDO%08d", id),
		AvatarURL: fmt.Sprintf("%savatars/u/%d?v=4", s.srv.URL+"/", id),
		URL:       base + "users/" + login,
		HTMLURL:   s.srv.URL + "/" + login,
		Type:      "User",
	}
}

func (s *Server) repoJSON(base string, r *repo) repoJSON {
	return repoJSON{
		ID:            r.id,
		NodeID:        fmt.Sprintf("R_kgDO%08d", r.id),
		Name:          r.name,
		FullName:      r.owner + "/" + r.name,
		Owner:         s.userJSON(base, r.owner),
		HTMLURL:       s.srv.URL + "/" + r.owner + "/" + r.name,
		URL:           base + "repos/" + r.owner + "/" + r.name,
		DefaultBranch: "main",
	}
}

func (s *Server) commentJSON(base string, r *repo, cm *Comment) commentJSON {
	api := base + "repos/" + r.owner + "/" + r.name
	kind := "issues"
	if r.issues[cm.Number-1].PullRequest != nil {
		kind = "pull"
	}
	return commentJSON{
		ID:                cm.ID,
		NodeID:            fmt.Sprintf("IC_kwDO%08d", cm.ID),
		URL:               fmt.Sprintf("%s/issues/comments/%d", api, cm.ID),
		HTMLURL:           fmt.Sprintf("%s/%s/%s/%s/%d#issuecomment-%d", s.srv.URL, r.owner, r.name, kind, cm.Number, cm.ID),
		IssueURL:          fmt.Sprintf("%s/issues/%d", api, cm.Number),
		Body:              cm.Body,
		User:              s.userJSON(base, cm.Author),
		CreatedAt:         cm.Created,
		UpdatedAt:         cm.Updated,
		AuthorAssociation: s.association(r, cm.Author),
	}
}

func (s *Server) statusJSON(base string, r *repo, st *Status) statusJSON {
	creator := s.userJSON(base, st.Creator)
	out := statusJSON{
		URL:       fmt.Sprintf("%srepos/%s/%s/statuses/%s", base, r.owner, r.name, st.SHA),
		AvatarURL: &creator.AvatarURL,
		ID:        st.ID,
		NodeID:    fmt.Sprintf("SC_kwDO%08d", st.ID),
		State:     st.State,
		Context:   st.Context,
		CreatedAt: st.Created,
		UpdatedAt: st.Created,
		Creator:   &creator,
	}
	if st.Description != "" {
		d := st.Description
		out.Description = &d
	}
	if st.TargetURL != "" {
		u := st.TargetURL
		out.TargetURL = &u
	}
	return out
}

func (s *Server) association(r *repo, login string) string {
	if strings.EqualFold(login, r.owner) {
		return "OWNER"
	}
	return "CONTRIBUTOR"
}

func (s *Server) labelsJSON(base string, r *repo, names []string) []labelJSON {
	out := []labelJSON{}
	for _, n := range names {
		id := s.label(r, n)
		out = append(out, labelJSON{
			ID:     id,
			NodeID: fmt.Sprintf("LA_kwDO%08d", id),
			URL:    base + "repos/" + r.owner + "/" + r.name + "/labels/" + url.PathEscape(n),
			Name:   n,
			Color:  "ededed",
		})
	}
	return out
}

func (s *Server) issueJSON(base string, r *repo, is *Issue) issueJSON {
	api := fmt.Sprintf("%srepos/%s/%s", base, r.owner, r.name)
	comments := 0
	for _, cm := range r.comments {
		if cm.Number == is.Number {
			comments++
		}
	}
	out := issueJSON{
		ID:                is.ID,
		NodeID:            fmt.Sprintf("I_kwDO%08d", is.ID),
		URL:               fmt.Sprintf("%s/issues/%d", api, is.Number),
		RepositoryURL:     api,
		LabelsURL:         fmt.Sprintf("%s/issues/%d/labels{/name}", api, is.Number),
		CommentsURL:       fmt.Sprintf("%s/issues/%d/comments", api, is.Number),
		EventsURL:         fmt.Sprintf("%s/issues/%d/events", api, is.Number),
		HTMLURL:           fmt.Sprintf("%s/%s/%s/issues/%d", s.srv.URL, r.owner, r.name, is.Number),
		Number:            is.Number,
		State:             is.State,
		Title:             is.Title,
		User:              s.userJSON(base, is.Author),
		Labels:            s.labelsJSON(base, r, is.Labels),
		Assignees:         []userJSON{},
		Comments:          comments,
		ClosedAt:          is.ClosedAt,
		CreatedAt:         is.Created,
		UpdatedAt:         is.Updated,
		AuthorAssociation: s.association(r, is.Author),
	}
	if is.Body != "" {
		b := is.Body
		out.Body = &b
	}
	if is.State == "closed" {
		reason := "completed"
		out.StateReason = &reason
	}
	if is.PullRequest != nil {
		out.HTMLURL = fmt.Sprintf("%s/%s/%s/pull/%d", s.srv.URL, r.owner, r.name, is.Number)
		out.PullRequest = &pullLinksJSON{
			URL:      fmt.Sprintf("%s/pulls/%d", api, is.Number),
			HTMLURL:  out.HTMLURL,
			DiffURL:  out.HTMLURL + ".diff",
			PatchURL: out.HTMLURL + ".patch",
		}
	}
	return out
}

func (s *Server) pullJSON(base string, r *repo, is *Issue) pullJSON {
	api := fmt.Sprintf("%srepos/%s/%s", base, r.owner, r.name)
	html := fmt.Sprintf("%s/%s/%s/pull/%d", s.srv.URL, r.owner, r.name, is.Number)
	owner := s.userJSON(base, r.owner)
	rj := s.repoJSON(base, r)
	baseSum := crc32.ChecksumIEEE([]byte(r.owner + "/" + r.name + ":" + is.PullRequest.Base))
	out := pullJSON{
		URL:                fmt.Sprintf("%s/pulls/%d", api, is.Number),
		ID:                 is.PullRequest.ID,
		NodeID:             fmt.Sprintf("PR_kwDO%08d", is.PullRequest.ID),
		HTMLURL:            html,
		DiffURL:            html + ".diff",
		PatchURL:           html + ".patch",
		IssueURL:           fmt.Sprintf("%s/issues/%d", api, is.Number),
		CommitsURL:         fmt.Sprintf("%s/pulls/%d/commits", api, is.Number),
		CommentsURL:        fmt.Sprintf("%s/issues/%d/comments", api, is.Number),
		Number:             is.Number,
		State:              is.State,
		Title:              is.Title,
		User:               s.userJSON(base, is.Author),
		Labels:             s.labelsJSON(base, r, is.Labels),
		CreatedAt:          is.Created,
		UpdatedAt:          is.Updated,
		ClosedAt:           is.ClosedAt,
		Assignees:          []userJSON{},
		RequestedReviewers: []userJSON{},
		Head: branchJSON{
			Label: r.owner + ":" + is.PullRequest.Head,
			Ref:   is.PullRequest.Head,
			SHA:   is.PullRequest.HeadSHA,
			User:  owner,
			Repo:  rj,
		},
		Base: branchJSON{
			Label: r.owner + ":" + is.PullRequest.Base,
			Ref:   is.PullRequest.Base,
			SHA:   fmt.Sprintf("%08x%032x", baseSum, 0),
			User:  owner,
			Repo:  rj,
		},
		AuthorAssociation: s.association(r, is.Author),
		Draft:             is.PullRequest.Draft,
	}
	if is.Body != "" {
		b := is.Body
		out.Body = &b
	}
	return out
}
