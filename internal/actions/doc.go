// Package actions is ferry's side of the runner protocol that GitHub Actions
// and Gitea Actions share: step inputs, step outputs, the step summary, log
// masks, groups and annotations, and the event payload that started the run.
// It reads the environment only through the getenv function it is given.
package actions
