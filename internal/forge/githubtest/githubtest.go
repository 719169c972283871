// Package githubtest is an in-process stand-in for GitHub's REST API, for
// tests: it serves the JSON GitHub documents for the endpoints ferry uses
// (the authenticated user, issue comments, pull requests, issues, issue
// and pull request labels, commit statuses, branches and tags), with token
// authentication, Link-header pagination and GitHub's body limit.
// github.com cannot be reached from the test machines; Gitea is tested for
// real instead (package giteatest).
package githubtest

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// MaxBody is the longest comment, issue or pull request body GitHub
// accepts, in characters.
const MaxBody = 65536

// DefaultPerPage is the page size used when a request names none (GitHub's
// own default is 30; the test server pages sooner to exercise clients).
const DefaultPerPage = 5

// User is an account of the test server.
type User struct {
	Login string
	ID    int64
	Token string
	// ReadOnly tokens are refused every write with GitHub's 403
	// "Resource not accessible by integration".
	ReadOnly bool
}

// Comment is an issue or pull request comment as the server holds it.
type Comment struct {
	ID      int64
	Number  int // issue or pull request
	Author  string
	Body    string
	Created time.Time
	Updated time.Time
}

// Issue is an issue or a pull request (GitHub numbers them in one
// sequence) as the server holds it.
type Issue struct {
	Number   int
	ID       int64
	Author   string
	Title    string
	Body     string
	State    string // open or closed
	Labels   []string
	Created  time.Time
	Updated  time.Time
	ClosedAt *time.Time

	// Set for pull requests only.
	PullRequest *Pull
}

// Pull is what a pull request has beyond its issue.
type Pull struct {
	ID      int64
	Head    string // branch
	HeadSHA string
	Base    string // branch
	Draft   bool
}

// Status is a commit status as the server holds it. The server has no
// git: any full hexadecimal SHA names a commit.
type Status struct {
	ID          int64
	SHA         string
	State       string // pending, success, failure or error
	Context     string
	Description string
	TargetURL   string
	Creator     string
	Created     time.Time
}

// MaxStatusDescription is the longest commit status description GitHub
// accepts, in characters.
const MaxStatusDescription = 140

// Request is one request the server answered.
type Request struct {
	Method string
	Path   string // without the optional /api/v3 prefix
	Query  string
	User   string // login of the token's user, "" when unauthenticated
	Status int
	Body   string
}

// Write reports whether the request asked for a change.
func (r Request) Write() bool { return r.Method != http.MethodGet && r.Method != http.MethodHead }

// Server is the test server. Its zero value is not usable: call New.
type Server struct {
	// URL is the API base URL with a trailing slash, as go-github wants it.
	// The same API is also served under URL + "api/v3/" (GitHub Enterprise).
	URL string

	srv *httptest.Server

	mu       sync.Mutex
	now      time.Time
	nextID   int64
	perPage  int
	users    map[string]*User // by token
	byLogin  map[string]*User // by lower-case login
	repos    map[string]*repo // by lower-case owner/name
	requests []Request
}

type repo struct {
	owner, name string
	id          int64
	issues      []*Issue // by number - 1
	comments    []*Comment
	labels      map[string]int64  // label name -> id
	statuses    []*Status         // oldest first
	branches    map[string]string // name -> commit SHA
	tags        []Ref             // as GitHub lists them
}

// Ref is a branch or tag of a repository and the commit it points at.
type Ref struct {
	Name string
	SHA  string
}

// New starts a server, stopped when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{
		now:     time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		nextID:  1000,
		perPage: DefaultPerPage,
		users:   map[string]*User{},
		byLogin: map[string]*User{},
		repos:   map[string]*repo{},
	}
	s.srv = httptest.NewUnstartedServer(s.handler())
	s.srv.Start()
	s.URL = s.srv.URL + "/"
	t.Cleanup(s.Close)
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// SetPerPage sets the page size of list answers when the request names
// none, and the largest one it may name (GitHub's largest is 100).
func (s *Server) SetPerPage(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n < 1 {
		n = 1
	}
	s.perPage = n
}

// AddUser creates an account and returns its token.
func (s *Server) AddUser(login string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u, ok := s.byLogin[strings.ToLower(login)]; ok {
		return u.Token
	}
	u := &User{Login: login, ID: s.id(), Token: fmt.Sprintf("ghp_test%s%d", strings.ToLower(login), len(s.users)+1)}
	s.users[u.Token] = u
	s.byLogin[strings.ToLower(login)] = u
	return u.Token
}

// SetReadOnly makes the token's writes fail with 403, as a workflow token
// without the permission does.
func (s *Server) SetReadOnly(token string, readOnly bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u, ok := s.users[token]; ok {
		u.ReadOnly = readOnly
	}
}

// AddRepo creates a repository; requests about any other answer 404.
func (s *Server) AddRepo(owner, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := strings.ToLower(owner + "/" + name)
	if _, ok := s.repos[key]; !ok {
		s.repos[key] = &repo{owner: owner, name: name, id: s.id(), labels: map[string]int64{}}
	}
}

// AddPullRequest opens a pull request by author from branch head into
// base (the repository is created when needed) and returns its number.
func (s *Server) AddPullRequest(owner, name, author, head, base, title, body string) int {
	s.AddRepo(owner, name)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.newPull(s.repo(owner, name), author, head, base, title, body, false).Number
}

// AddLabels puts labels on issue or pull request n.
func (s *Server) AddLabels(owner, name string, n int, labels ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repo(owner, name)
	if r == nil || n < 1 || n > len(r.issues) {
		panic(fmt.Sprintf("githubtest: no issue %s/%s#%d", owner, name, n))
	}
	is := r.issues[n-1]
	for _, l := range labels {
		s.label(r, l)
		if !slices.Contains(is.Labels, l) {
			is.Labels = append(is.Labels, l)
		}
	}
}

// PullHeadSHA is the head commit of pull request n.
func (s *Server) PullHeadSHA(owner, name string, n int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.repo(owner, name).issues[n-1].PullRequest.HeadSHA
}

// SetBranch points branch at sha (the repository is created when
// needed). The server has no git: any SHA will do.
func (s *Server) SetBranch(owner, name, branch, sha string) {
	s.AddRepo(owner, name)
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repo(owner, name)
	if r.branches == nil {
		r.branches = map[string]string{}
	}
	r.branches[branch] = sha
}

// AddTag adds a tag at sha; tags are listed in the order added.
func (s *Server) AddTag(owner, name, tag, sha string) {
	s.AddRepo(owner, name)
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repo(owner, name)
	r.tags = append(r.tags, Ref{Name: tag, SHA: sha})
}

// AddIssue opens an issue by author (the repository is created when
// needed) and returns its number.
func (s *Server) AddIssue(owner, name, author, title, body string, labels ...string) int {
	s.AddRepo(owner, name)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.newIssue(s.repo(owner, name), author, title, body, labels).Number
}

// AddComment comments on issue or pull request n as author and returns
// the comment's ID.
func (s *Server) AddComment(owner, name string, n int, author, body string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repo(owner, name)
	if r == nil || n < 1 || n > len(r.issues) {
		panic(fmt.Sprintf("githubtest: no issue %s/%s#%d", owner, name, n))
	}
	return s.newComment(r, n, author, body).ID
}

// Comments returns the comments of issue or pull request n, oldest first.
func (s *Server) Comments(owner, name string, n int) []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Comment
	if r := s.repo(owner, name); r != nil {
		for _, c := range r.comments {
			if c.Number == n {
				out = append(out, *c)
			}
		}
	}
	return out
}

// Labels returns the labels issue or pull request n carries, in the order
// they were put on.
func (s *Server) Labels(owner, name string, n int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repo(owner, name)
	if r == nil || n < 1 || n > len(r.issues) {
		return nil
	}
	return slices.Clone(r.issues[n-1].Labels)
}

// Statuses returns every status set on commit sha, oldest first.
func (s *Server) Statuses(owner, name, sha string) []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Status
	if r := s.repo(owner, name); r != nil {
		for _, st := range r.statuses {
			if strings.EqualFold(st.SHA, sha) {
				out = append(out, *st)
			}
		}
	}
	return out
}

// PullRequests returns the repository's pull requests, by number.
func (s *Server) PullRequests(owner, name string) []Issue {
	return s.list(owner, name, true)
}

// Issues returns the repository's issues (not pull requests), by number.
func (s *Server) Issues(owner, name string) []Issue {
	return s.list(owner, name, false)
}

func (s *Server) list(owner, name string, pulls bool) []Issue {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Issue
	if r := s.repo(owner, name); r != nil {
		for _, is := range r.issues {
			if (is.PullRequest != nil) == pulls {
				c := *is
				c.Labels = slices.Clone(is.Labels)
				if is.PullRequest != nil {
					p := *is.PullRequest
					c.PullRequest = &p
				}
				out = append(out, c)
			}
		}
	}
	return out
}

// Requests returns the requests answered so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Writes returns the requests that asked for a change.
func (s *Server) Writes() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Write() {
			out = append(out, r)
		}
	}
	return out
}

// ResetRequests forgets the requests recorded so far.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
}

// The helpers below run with s.mu held.

func (s *Server) id() int64 {
	s.nextID++
	return s.nextID
}

// tick advances the server's clock, so timestamps are distinct and
// deterministic.
func (s *Server) tick() time.Time {
	s.now = s.now.Add(time.Second)
	return s.now
}

func (s *Server) repo(owner, name string) *repo {
	return s.repos[strings.ToLower(owner+"/"+name)]
}

func (s *Server) login(login string) string {
	if u, ok := s.byLogin[strings.ToLower(login)]; ok {
		return u.Login
	}
	return login
}

func (s *Server) newIssue(r *repo, author, title, body string, labels []string) *Issue {
	now := s.tick()
	is := &Issue{
		Number:  len(r.issues) + 1,
		ID:      s.id(),
		Author:  s.login(author),
		Title:   title,
		Body:    body,
		State:   "open",
		Created: now,
		Updated: now,
	}
	for _, l := range labels {
		s.label(r, l)
		if !slices.Contains(is.Labels, l) {
			is.Labels = append(is.Labels, l)
		}
	}
	r.issues = append(r.issues, is)
	return is
}

func (s *Server) newPull(r *repo, author, head, base, title, body string, draft bool) *Issue {
	is := s.newIssue(r, author, title, body, nil)
	sum := sha1.Sum([]byte(fmt.Sprintf("%s/%s:%s#%d", r.owner, r.name, head, is.Number)))
	is.PullRequest = &Pull{ID: s.id(), Head: head, HeadSHA: hex.EncodeToString(sum[:]), Base: base, Draft: draft}
	return is
}

func (s *Server) newComment(r *repo, n int, author, body string) *Comment {
	now := s.tick()
	c := &Comment{ID: s.id(), Number: n, Author: s.login(author), Body: body, Created: now, Updated: now}
	r.comments = append(r.comments, c)
	r.issues[n-1].Updated = now
	return c
}

// labelName returns the name of the repository's label called name in
// any case, creating the label when there is none (as GitHub does when a
// label is put on an issue).
func (s *Server) labelName(r *repo, name string) string {
	for l := range r.labels {
		if strings.EqualFold(l, name) {
			return l
		}
	}
	s.label(r, name)
	return name
}

func (s *Server) label(r *repo, name string) int64 {
	for l, id := range r.labels {
		if strings.EqualFold(l, name) {
			return id
		}
	}
	id := s.id()
	r.labels[name] = id
	return id
}
