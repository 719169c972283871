package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func postDiffComment(cmd *cobra.Command, e *env, o *diffOptions, blocks []string) error {
	return fmt.Errorf("--comment: not wired yet")
}
