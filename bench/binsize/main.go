// Command binsize says what makes up a Go binary (Linux ELF): the bytes
// its symbols take in the file's loaded sections (code, read-only data,
// data; the size the release's stripped binary has), summed by the module
// each symbol's package belongs to (go version -m), then by group (Go's
// runtime and standard library, Kubernetes, Helm, Flux, SOPS and the cloud
// SDKs it links in for its KMS key services, ...). What belongs to no
// package is shown apart: the function tables (.gopclntab), type
// descriptors and strings, alignment. The binary must keep its symbol
// table (built without -ldflags -s; -w drops only the debug info). Type
// descriptors are not in Go's symbol table, so the Kubernetes API types'
// reflection data counts under "type descriptors", not under Kubernetes.
//
//	go run ./bench/binsize BINARY [TOP]
package main

import (
	"debug/elf"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
)

// groups maps module path prefixes to what a reader knows them as; the
// first match wins, so the more specific prefixes come first.
var groups = []struct{ name, prefixes string }{
	{"ferry", "github.com/ferry-ci/ferry"},
	{"Go runtime and standard library", "std"},
	{"SOPS (github.com/getsops)", "github.com/getsops/"},
	{"AWS SDK (SOPS: KMS; S3 through sops/v3/publish, which sops/v3/config imports)", "github.com/aws/"},
	{"Google Cloud SDK (SOPS: Cloud KMS; Cloud Storage through sops/v3/publish), its Google API, OpenTelemetry and xDS libraries",
		"cloud.google.com/go google.golang.org/api google.golang.org/genproto github.com/googleapis/ github.com/GoogleCloudPlatform/ " +
			"go.opentelemetry.io/ github.com/google/s2a-go go.opencensus.io github.com/envoyproxy/ github.com/cncf/ github.com/spiffe/"},
	{"Azure SDK (SOPS: Key Vault)", "github.com/Azure/ github.com/AzureAD/ github.com/golang-jwt/ github.com/kylelemons/ github.com/pkg/browser"},
	{"HuaweiCloud SDK (SOPS: hckms) and the MongoDB BSON it uses", "github.com/huaweicloud/ github.com/tjfoc/ go.mongodb.org/mongo-driver"},
	{"HashiCorp Vault API (SOPS: hcvault)", "github.com/hashicorp/vault github.com/hashicorp/go-cleanhttp github.com/hashicorp/go-retryablehttp " +
		"github.com/hashicorp/go-rootcerts github.com/hashicorp/go-secure-stdlib github.com/hashicorp/go-sockaddr github.com/hashicorp/hcl github.com/ryanuber/"},
	{"gRPC (ferry's SOPS key service client; the Google Cloud SDK)", "google.golang.org/grpc"},
	{"Kubernetes (k8s.io, sigs.k8s.io: client-go, apimachinery, api, kustomize, ...) and CEL with its ANTLR parser", "k8s.io/ sigs.k8s.io/ github.com/google/cel-go cel.dev/ github.com/antlr4-go/"},
	{"Helm, and the SQL storage driver its action package links (lib/pq, squirrel, sqlx)", "helm.sh/ github.com/lib/pq github.com/Masterminds/squirrel github.com/jmoiron/sqlx github.com/lann/"},
	{"Flux", "github.com/fluxcd/"},
	{"go-git (with its OpenPGP)", "github.com/go-git/ github.com/ProtonMail/ github.com/cloudflare/circl"},
	{"OCI registries (go-containerregistry, oras, opencontainers, docker)", "github.com/google/go-containerregistry oras.land/ github.com/opencontainers/ github.com/docker/"},
	{"protobuf and gogo", "google.golang.org/protobuf github.com/gogo/ github.com/golang/protobuf"},
	{"OpenAPI (go-openapi, gnostic)", "github.com/go-openapi/ github.com/google/gnostic-models"},
	{"golang.org/x", "golang.org/x/"},
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: go run ./bench/binsize BINARY [TOP]")
		os.Exit(2)
	}
	bin := os.Args[1]
	top := 20
	if len(os.Args) > 2 {
		n, err := strconv.Atoi(os.Args[2])
		if err != nil {
			fmt.Fprintf(os.Stderr, "binsize: TOP %q is not a number\n", os.Args[2])
			os.Exit(2)
		}
		top = n
	}
	if err := run(bin, top); err != nil {
		fmt.Fprintln(os.Stderr, "binsize:", err)
		os.Exit(1)
	}
}

func run(bin string, top int) error {
	mods, err := modules(bin)
	if err != nil {
		return err
	}
	f, err := elf.Open(bin)
	if err != nil {
		return err
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		return fmt.Errorf("%s: %w (build it without -ldflags -s)", bin, err)
	}
	// The loaded sections that take room in the file; .bss and .noptrbss
	// (zeroed at start) take none.
	var loaded int64
	sections := map[int]*elf.Section{}
	for i, sec := range f.Sections {
		if sec.Flags&elf.SHF_ALLOC != 0 && sec.Type == elf.SHT_PROGBITS {
			sections[i] = sec
			loaded += int64(sec.Size)
		}
	}
	byModule := map[string]int64{}
	textByModule := map[string]int64{}
	bySection := map[string]int64{} // bytes of the section given to packages
	var attributed int64
	for _, sym := range syms {
		sec := sections[int(sym.Section)]
		// The function tables are counted whole; the linker's own symbols
		// (go:func.*, go:string.*, go:itab..., type links) are no
		// package's.
		if sym.Size == 0 || sec == nil || sec.Name == ".gopclntab" || strings.HasPrefix(sym.Name, "go:") ||
			sym.Name == "runtime.typelink" || sym.Name == "runtime.itablink" || sym.Name == "runtime.findfunctab" {
			continue
		}
		size := int64(sym.Size)
		m := moduleOf(pkgOf(sym.Name), mods)
		byModule[m] += size
		if sec.Name == ".text" {
			textByModule[m] += size
		}
		bySection[sec.Name] += size
		attributed += size
	}
	size := func(name string) int64 {
		if sec := f.Section(name); sec != nil {
			return int64(sec.Size)
		}
		return 0
	}
	pclntab := size(".gopclntab")
	rodataRest := size(".rodata") - bySection[".rodata"]
	textRest := size(".text") - bySection[".text"]
	otherRest := loaded - attributed - pclntab - rodataRest - textRest

	byGroup, textByGroup := map[string]int64{}, map[string]int64{}
	for m, n := range byModule {
		byGroup[groupOf(m)] += n
		textByGroup[groupOf(m)] += textByModule[m]
	}
	// A group's estimated share of the function tables: in proportion to
	// its code.
	withTables := func(g string) int64 {
		if bySection[".text"] == 0 {
			return byGroup[g]
		}
		return byGroup[g] + pclntab*textByGroup[g]/bySection[".text"]
	}
	mb := func(n int64) string { return fmt.Sprintf("%6.1f MB", float64(n)/1e6) }
	pct := func(n int64) string { return fmt.Sprintf("%5.1f%%", 100*float64(n)/float64(loaded)) }
	fmt.Printf("binary %s: %s in its loaded sections (what a stripped build weighs):\n", bin, strings.TrimSpace(mb(loaded)))
	fmt.Printf("  %s %s  function tables (.gopclntab: line and stack maps of every function, in proportion to code)\n", mb(pclntab), pct(pclntab))
	fmt.Printf("  %s %s  type descriptors and strings (.rodata without symbols: runtime.types, go:string.*)\n", mb(rodataRest), pct(rodataRest))
	fmt.Printf("  %s %s  alignment between functions (.text)\n", mb(textRest), pct(textRest))
	fmt.Printf("  %s %s  other linker tables and data (type and itab links, build info, ...)\n", mb(otherRest), pct(otherRest))
	fmt.Printf("  %s %s  code and data of packages, by group (and, after the |, with the group's share of the function tables, in proportion to its code: an estimate):\n", mb(attributed), pct(attributed))
	for _, g := range sortedKeys(byGroup) {
		fmt.Printf("    %s %s | %s %s  %s\n", mb(byGroup[g]), pct(byGroup[g]), mb(withTables(g)), pct(withTables(g)), g)
	}
	fmt.Printf("largest modules (of %d):\n", len(byModule))
	for i, m := range sortedKeys(byModule) {
		if i == top {
			break
		}
		fmt.Printf("  %s %s  %s\n", mb(byModule[m]), pct(byModule[m]), m)
	}
	return nil
}

// modules lists the binary's main module and dependencies (go version -m).
func modules(bin string) ([]string, error) {
	out, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		return nil, fmt.Errorf("go version -m %s: %w", bin, err)
	}
	var mods []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && (f[0] == "mod" || f[0] == "dep") {
			mods = append(mods, f[1])
		}
	}
	// Longest first: the most specific module owns a package.
	sort.Slice(mods, func(i, j int) bool { return len(mods[i]) > len(mods[j]) })
	return mods, nil
}

// pkgOf returns the import path of the package a symbol belongs to:
// "github.com/a/b/c.(*T).M" -> "github.com/a/b/c", with the linker's
// prefixes (type:, go:itab., ...) and generic instantiations removed.
func pkgOf(sym string) string {
	for _, p := range []string{"type:.eq.", "type:.hash.", "type:.namedata.", "type:", "go:itab.", "go:link.", "go:string.", "go:"} {
		sym = strings.TrimPrefix(sym, p)
	}
	sym = strings.TrimLeft(sym, "*[]")
	if i := strings.IndexAny(sym, "[,"); i >= 0 {
		sym = sym[:i]
	}
	slash := strings.LastIndexByte(sym, '/')
	pkg := sym
	if dot := strings.IndexByte(sym[slash+1:], '.'); dot >= 0 {
		pkg = sym[:slash+1+dot]
	}
	// The linker escapes dots of the last path element: gopkg.in/ini%2ev1.
	if p, err := url.PathUnescape(pkg); err == nil {
		pkg = p
	}
	return pkg
}

// moduleOf returns the module owning pkg, "std" for the standard library
// and the runtime (a first path element without a dot), or "(other)".
func moduleOf(pkg string, mods []string) string {
	for _, m := range mods {
		if pkg == m || strings.HasPrefix(pkg, m+"/") {
			return m
		}
	}
	first, _, _ := strings.Cut(pkg, "/")
	if !strings.Contains(first, ".") {
		return "std"
	}
	return "(other: " + pkg + ")"
}

func groupOf(module string) string {
	for _, g := range groups {
		for _, p := range strings.Fields(g.prefixes) {
			// "a/b/" is every module under a/b; "a/b" is a/b and the
			// modules under it.
			if strings.HasSuffix(p, "/") && strings.HasPrefix(module, p) || module == p || strings.HasPrefix(module, p+"/") {
				return g.name
			}
		}
	}
	return "other"
}

func sortedKeys(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}
