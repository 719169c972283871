package kube_test

import (
	"os"
	"testing"

	"github.com/ferry-ci/ferry/internal/kube/kubetest"
)

// cp is one real control plane (etcd + kube-apiserver) for the package.
var cp *kubetest.ControlPlane

func TestMain(m *testing.M) { os.Exit(kubetest.Run(m, &cp)) }
