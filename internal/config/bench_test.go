package config_test

import (
	"fmt"
	"testing"

	"github.com/ferry-ci/ferry/internal/config"
	"github.com/ferry-ci/ferry/internal/render"
	"github.com/ferry-ci/ferry/internal/testtree"
)

// BenchmarkLoad discovers the targets of generated fleets (genFleet) of
// growing size, as `ferry render --list` does. Discovery's own work is
// linear; what still grows faster than the fleet is kustomize building
// each cluster root (its resource map checks every object against all the
// others), most of the time at 5,000. The flat layout renders nothing, so
// it times discovery alone. Rerun with
//
//	go test -run '^$' -bench Load -benchtime 1x ./internal/config/
func BenchmarkLoad(b *testing.B) {
	for _, bc := range []struct {
		layout string
		n      int
	}{
		{"clusters", 500},
		{"clusters", 1000},
		{"clusters", 2000},
		{"clusters", 5000},
		{"flat", 5000},
	} {
		b.Run(fmt.Sprintf("%s/%d", bc.layout, bc.n), func(b *testing.B) {
			dir := b.TempDir()
			testtree.Write(b, dir, genFleet(bc.n, bc.layout))
			var targets int
			for b.Loop() {
				repo, err := config.Load(b.Context(), dir, render.Options{})
				if err != nil {
					b.Fatal(err)
				}
				targets = len(repo.Targets)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*targets), "µs/target")
		})
	}
}
