package taskhook

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/taskhook/taskhook"

// pkg is what `go list -json` says of one package of the module, its imports
// cut to the module's own packages and named by folder.
type pkg struct {
	Dir         string // folder, relative to the module root
	Imports     []string
	TestImports []string // of its _test.go files, both packages
}

// modulePackages lists every package of the module with `go list -json`.
func modulePackages(t *testing.T) map[string]pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	own := func(paths []string) []string {
		var in []string
		for _, p := range paths {
			if rel, ok := strings.CutPrefix(p, module+"/"); ok {
				in = append(in, rel)
			}
		}
		return in
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath                         string
			Imports, TestImports, XTestImports []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		dir, ok := strings.CutPrefix(p.ImportPath, module+"/")
		if !ok {
			continue // the module root: this test
		}
		pkgs[dir] = pkg{Dir: dir, Imports: own(p.Imports), TestImports: own(append(p.TestImports, p.XTestImports...))}
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages; the module has more", len(pkgs))
	}
	return pkgs
}

// entry is one folder of the README's layout: what it may import.
type entry struct {
	folder  string   // "store/", "channels/slack/"
	allowed []string // folders, without the slash
	arrow   bool     // the entry says what it may import
}

// readmeLayout reads the code block of README.md's Layout section: an entry
// starts at a line whose first word is a folder ("store/"), runs on over
// indented lines, and says "-> a, b" (or "-> (nothing)") once.
func readmeLayout(t *testing.T) []entry {
	t.Helper()
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## Layout\n")
	if !ok {
		t.Fatal("README.md has no Layout section")
	}
	_, block, ok := strings.Cut(section, "```\n")
	if !ok {
		t.Fatal("README.md's Layout section has no code block")
	}
	block, _, _ = strings.Cut(block, "```")
	var entries []entry
	sc := bufio.NewScanner(strings.NewReader(block))
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		if line[0] != ' ' {
			first, _, _ := strings.Cut(line, " ")
			if !strings.HasSuffix(first, "/") {
				continue // a heading of a group of folders
			}
			entries = append(entries, entry{folder: first})
		}
		if len(entries) == 0 {
			t.Fatalf("README layout: %q comes before any folder", line)
		}
		e := &entries[len(entries)-1]
		_, arrow, found := strings.Cut(line, "-> ")
		if !found {
			continue
		}
		if e.arrow {
			t.Errorf("README layout: %s says what it imports twice", e.folder)
		}
		e.arrow = true
		if strings.HasPrefix(arrow, "(") {
			continue // (nothing), (nothing of ours)
		}
		for _, a := range strings.Split(arrow, ",") {
			e.allowed = append(e.allowed, strings.TrimSuffix(strings.TrimSpace(a), "/"))
		}
	}
	if len(entries) == 0 {
		t.Fatal("README layout lists no folders")
	}
	return entries
}

// entryOf is the most specific entry whose folder holds dir.
func entryOf(entries []entry, dir string) (entry, bool) {
	var best entry
	found := false
	for _, e := range entries {
		if strings.HasPrefix(dir+"/", e.folder) && len(e.folder) > len(best.folder) {
			best, found = e, true
		}
	}
	return best, found
}

// under says whether dir is folder or inside it.
func under(dir, folder string) bool { return dir == folder || strings.HasPrefix(dir, folder+"/") }

// TestReadmeLayoutIsTheImportGraph: every package of the module has an entry
// in README.md's Layout section, and imports only what that entry allows
// (its own subfolders aside, which it may use as it likes).
func TestReadmeLayoutIsTheImportGraph(t *testing.T) {
	pkgs := modulePackages(t)
	entries := readmeLayout(t)
	used := map[string]bool{}
	for _, dir := range slices.Sorted(maps.Keys(pkgs)) {
		p := pkgs[dir]
		e, ok := entryOf(entries, dir)
		if !ok {
			t.Errorf("%s has no entry in README.md's Layout section", dir)
			continue
		}
		used[e.folder] = true
		if !e.arrow {
			t.Errorf("README layout: %s (holding %s) does not say what it imports", e.folder, dir)
			continue
		}
		for _, imp := range p.Imports {
			if under(imp, strings.TrimSuffix(e.folder, "/")) {
				continue
			}
			if !slices.ContainsFunc(e.allowed, func(a string) bool { return imp == a }) {
				t.Errorf("%s imports %s, which README.md's layout does not allow for %s", dir, imp, e.folder)
			}
		}
	}
	for _, e := range entries {
		if _, err := os.Stat(e.folder); err != nil {
			t.Errorf("README layout lists %s, which does not exist", e.folder)
		}
		for _, a := range e.allowed {
			if _, ok := pkgs[a]; !ok {
				t.Errorf("README layout: %s may import %s, which is not a package", e.folder, a)
			}
		}
	}
}

// faces are the packages that adapt the services to a protocol or a person.
var faces = []string{"handlers", "channels", "mcp", "a2a"}

// services are the packages that hold the rules.
var services = []string{"tasks", "sessions", "hooks", "connections", "tools", "callbacks"}

// storeName is a use of a name of package store.
var storeName = regexp.MustCompile(`\bstore\.[A-Z]\w*`)

// TestImportRules: the rules the layering stands on, whatever the README
// says. Faces import services, never store (their tests may name the
// backend, a store.Config, that store/storetest, the kit every suite runs
// on, hands them, and nothing else of store);
// store imports no service and no face; only cmd imports app, and only tests
// reach for app's kit; the Standard Webhooks package is not under callbacks/.
func TestImportRules(t *testing.T) {
	pkgs := modulePackages(t)
	isFace := func(dir string) bool { return slices.ContainsFunc(faces, func(f string) bool { return under(dir, f) }) }
	for dir, p := range pkgs {
		for _, imp := range p.Imports {
			if isFace(dir) && under(imp, "store") {
				t.Errorf("%s is a face and imports %s", dir, imp)
			}
			if under(imp, "app") && !under(dir, "app") && !under(dir, "cmd") {
				t.Errorf("%s imports %s", dir, imp)
			}
			if under(imp, "cmd") {
				t.Errorf("%s imports %s", dir, imp)
			}
		}
		if isFace(dir) && slices.Contains(p.TestImports, "store") {
			files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
			for _, f := range files {
				src, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				for _, use := range storeName.FindAllString(string(src), -1) {
					if use != "store.Config" {
						t.Errorf("%s, a test of a face, uses %s", f, use)
					}
				}
			}
		}
		if under(dir, "store") && dir != "store/storetest" {
			for _, imp := range p.Imports {
				for _, s := range append(slices.Clone(services), faces...) {
					if under(imp, s) {
						t.Errorf("store package %s imports %s", dir, imp)
					}
				}
			}
		}
		if under(dir, "callbacks/stdwebhooks") {
			t.Errorf("the Standard Webhooks package sits under callbacks/: %s", dir)
		}
	}
	if _, ok := pkgs["stdwebhooks"]; !ok {
		t.Error("no stdwebhooks package")
	}
}

// TestWaitRegistryIsNotInStore: the in-process registry of waits (waiters,
// wake-ups, log reads that wait) makes no Redis call, so it is not store's.
func TestWaitRegistryIsNotInStore(t *testing.T) {
	declared := func(dir string) map[string]bool {
		names := map[string]bool{}
		fset := token.NewFileSet()
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range af.Decls {
				switch d := d.(type) {
				case *ast.GenDecl:
					for _, spec := range d.Specs {
						if ts, ok := spec.(*ast.TypeSpec); ok {
							names[ts.Name.Name] = true
						}
					}
				case *ast.FuncDecl:
					if d.Recv == nil {
						names[d.Name.Name] = true
					}
				}
			}
		}
		return names
	}
	inStore := declared("store")
	inWaits := declared("waits")
	for _, name := range []string{"Waiters", "Waiter", "Wake", "LogQuery", "LogPoll", "Kinds"} {
		if inStore[name] {
			t.Errorf("store declares %s, which is the wait registry's", name)
		}
		if !inWaits[name] {
			t.Errorf("waits does not declare %s", name)
		}
	}
}
