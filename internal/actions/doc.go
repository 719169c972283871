// Package actions is ferry's side of the runner protocol that GitHub Actions
// and Gitea Actions share: step inputs (turned into a command's flags, the
// secret ones checked and masked without being shown), step outputs, the
// step summary, log masks, groups, annotations placed on the file an error
// names, and the event payload that started the run. It reads the
// environment only through the getenv function it is given.
package actions
