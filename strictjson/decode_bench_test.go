package strictjson

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/taskhook/taskhook/api/wire"
)

// createTask is the body of the route every agent calls most: a task
// create (tasks.CreateInput is this type).
type createTask = wire.CreateTask[json.RawMessage]

// createBody is a task create body of about size bytes: an input of
// documents with text, some of it escaped or not ASCII, and metadata.
func createBody(tb testing.TB, size int) []byte {
	tb.Helper()
	type doc struct {
		Title string         `json:"title"`
		Text  string         `json:"text"`
		Tags  []string       `json:"tags"`
		Score float64        `json:"score"`
		Meta  map[string]any `json:"meta"`
	}
	var docs []doc
	body := func() []byte {
		b, err := json.Marshal(map[string]any{
			"sessionId": "ses_0abcdefghjkmnpqrstvwxyz0123", "kind": "research", "label": "Summarise the café reports",
			"input":    map[string]any{"query": "quarterly \"numbers\" – 2025\n", "documents": docs},
			"metadata": map[string]any{"agent": "planner", "attempt": 1, "trace": []int{1, 2, 3}},
		})
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	for len(body()) < size {
		docs = append(docs, doc{
			Title: fmt.Sprintf("Report %d", len(docs)), Text: strings.Repeat("Revenue grew in Zürich; costs fell. ", 4),
			Tags: []string{"finance", "q3"}, Score: 0.75, Meta: map[string]any{"pages": 12, "draft": false, "owner": nil},
		})
	}
	return body()
}

// eachBodySize runs fn as a sub-benchmark on create bodies of 1 KiB and
// 100 KiB.
func eachBodySize(b *testing.B, fn func(b *testing.B, body []byte)) {
	for _, size := range []int{1 << 10, 100 << 10} {
		body := createBody(b, size)
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			fn(b, body)
		})
	}
}

// BenchmarkDecode measures the strict decode every POST pays.
func BenchmarkDecode(b *testing.B) {
	eachBodySize(b, func(b *testing.B, body []byte) {
		for b.Loop() {
			var in createTask
			if err := Decode(body, &in); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCheck is the part of it that checks text, depth and names.
func BenchmarkCheck(b *testing.B) {
	root := shapeOf(reflect.TypeFor[createTask]())
	eachBodySize(b, func(b *testing.B, body []byte) {
		for b.Loop() {
			if err := check(body, root); err != nil {
				b.Fatal(err)
			}
		}
	})
}
