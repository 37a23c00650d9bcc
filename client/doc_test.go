package client_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/taskhook/taskhook/client"
)

// wireTypes are the client's types that are api/wire's shapes: go doc
// shows their declaration (type Task = wire.Task[...]), not their fields,
// so their doc comments list the fields.
var wireTypes = map[string]reflect.Type{
	"Task":                  reflect.TypeFor[client.Task](),
	"InputRequest":          reflect.TypeFor[client.InputRequest](),
	"Choice":                reflect.TypeFor[client.Choice](),
	"Answer":                reflect.TypeFor[client.Answer](),
	"InputResponse":         reflect.TypeFor[client.InputResponse](),
	"TaskError":             reflect.TypeFor[client.TaskError](),
	"CreateTaskInput":       reflect.TypeFor[client.CreateTaskInput](),
	"Session":               reflect.TypeFor[client.Session](),
	"CreateSessionInput":    reflect.TypeFor[client.CreateSessionInput](),
	"Detail":                reflect.TypeFor[client.Detail](),
	"Event":                 reflect.TypeFor[client.Event](),
	"Hook":                  reflect.TypeFor[client.Hook](),
	"CreatedHook":           reflect.TypeFor[client.CreatedHook](),
	"HookVerify":            reflect.TypeFor[client.HookVerify](),
	"HookResponse":          reflect.TypeFor[client.HookResponse](),
	"CreateHookInput":       reflect.TypeFor[client.CreateHookInput](),
	"HookEvent":             reflect.TypeFor[client.HookEvent](),
	"HookBatch":             reflect.TypeFor[client.HookBatch](),
	"EndpointRequest":       reflect.TypeFor[client.EndpointRequest](),
	"SlackTarget":           reflect.TypeFor[client.SlackTarget](),
	"Endpoint":              reflect.TypeFor[client.Endpoint](),
	"DeadLetter":            reflect.TypeFor[client.DeadLetter](),
	"ConnectionToken":       reflect.TypeFor[client.ConnectionToken](),
	"AuthorizationPending":  reflect.TypeFor[client.AuthorizationPending](),
	"AuthorizationRejected": reflect.TypeFor[client.AuthorizationRejected](),
	"ConnectionView":        reflect.TypeFor[client.ConnectionView](),
	"Tool":                  reflect.TypeFor[client.Tool](),
	"PutToolInput":          reflect.TypeFor[client.PutToolInput](),
	"CallToolInput":         reflect.TypeFor[client.CallToolInput](),
}

// TestDocShowsFields runs go doc on the package and wants every field of
// each of its wire types named in that type's documentation, so that go doc
// client.CreateTaskInput tells a reader what to fill in. A field added to a
// wire shape without a word in the client's doc fails here.
func TestDocShowsFields(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on the PATH")
	}
	out, err := exec.Command(goTool, "doc", "-all", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go doc: %v\n%s", err, out)
	}
	docs := typeDocs(string(out))
	for name, typ := range wireTypes {
		doc, ok := docs[name]
		if !ok {
			t.Errorf("go doc shows no type %s", name)
			continue
		}
		for _, field := range fieldNames(typ) {
			if !regexp.MustCompile(`\b` + field + `\b`).MatchString(doc) {
				t.Errorf("go doc client.%s does not name its field %s:\n%s", name, field, doc)
			}
		}
	}
}

// TestDocCoversWireTypes: every type the client declares from api/wire is
// among wireTypes, so TestDocShowsFields checks it.
func TestDocCoversWireTypes(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			spec, ok := n.(*ast.TypeSpec)
			if ok && spec.Name.IsExported() && fromWire(spec.Type) {
				found = append(found, spec.Name.Name)
			}
			return true
		})
	}
	if len(found) == 0 {
		t.Fatal("found no type declared from api/wire")
	}
	for _, name := range found {
		if _, ok := wireTypes[name]; !ok {
			t.Errorf("client.%s is declared from api/wire but not in wireTypes: list its fields in its doc and add it", name)
		}
	}
	for name := range wireTypes {
		if !slices.Contains(found, name) {
			t.Errorf("wireTypes names %s, which is not declared from api/wire", name)
		}
	}
}

// fromWire reports whether a type expression is wire.X or wire.X[...].
func fromWire(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.IndexExpr:
		return fromWire(x.X)
	case *ast.IndexListExpr:
		return fromWire(x.X)
	case *ast.SelectorExpr:
		id, ok := x.X.(*ast.Ident)
		return ok && id.Name == "wire"
	}
	return false
}

// typeDocs splits go doc -all's output by type: each type's declaration and
// the indented lines under it.
func typeDocs(out string) map[string]string {
	docs := map[string]string{}
	var name string
	var b strings.Builder
	flush := func() {
		if name != "" {
			docs[name] = b.String()
		}
		name = ""
		b.Reset()
	}
	for line := range strings.Lines(out) {
		if line != "" && line[0] != ' ' && line[0] != '\t' && line[0] != '\n' {
			flush()
			if rest, ok := strings.CutPrefix(line, "type "); ok {
				name = strings.FieldsFunc(rest, func(r rune) bool { return r == ' ' || r == '[' })[0]
			}
		}
		if name != "" {
			b.WriteString(line)
		}
	}
	flush()
	return docs
}

// fieldNames are a struct's exported fields; an embedded one is named by
// its type, whose own doc lists its fields.
func fieldNames(t reflect.Type) []string {
	var names []string
	for f := range t.Fields() {
		if f.IsExported() {
			names = append(names, f.Name)
		}
	}
	return names
}
