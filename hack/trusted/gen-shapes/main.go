// Command gen-shapes writes, as TypeScript modules, how Go's encoding/json sees every type
// reachable from the Tekton kinds whose signatures src/policy/trusted.ts
// verifies (v1.Task, v1.Pipeline, v1beta1.StepAction): for each struct, its
// fields in marshalling order (embedded structs already promoted, Go's
// dominance rules applied), their JSON names, omitempty, and type. Its one
// argument picks the module: "tekton" (Tekton's own structs and the kinds'
// roots) or "kubernetes" (the Kubernetes structs they embed).
//
//	cd hack/trusted && go run ./gen-shapes tekton > ../../src/policy/tekton-shapes.ts
//	cd hack/trusted && go run ./gen-shapes kubernetes > ../../src/policy/kubernetes-shapes.ts
//
// (test/unit/trusted.test.ts checks that the committed files are its output.)
//
// Type expressions: "string", "bool", "int32", … (Go kinds); "*T" pointer;
// "[]T" slice; "map[string]T"; "bytes" ([]byte, base64); "any"
// (interface{}); "@Name" a struct listed under TEKTON_TYPES or
// KUBERNETES_TYPES; "!Name" a type with its own MarshalJSON/UnmarshalJSON,
// which src/policy/tekton-decode.ts and go-json.ts implement by name.
// A type this program does not know how to describe stops it with an error,
// so a Tekton upgrade that adds one cannot go unnoticed.
package main

import (
	"encoding"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"github.com/tektoncd/pipeline/pkg/apis/pipeline/v1beta1"
)

var (
	jsonMarshaler   = reflect.TypeOf((*json.Marshaler)(nil)).Elem()
	jsonUnmarshaler = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()
	textMarshaler   = reflect.TypeOf((*encoding.TextMarshaler)(nil)).Elem()
	textUnmarshaler = reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()
)

// Types with their own JSON form, by package path and name; trusted.ts has
// an implementation for each of these names.
var custom = map[string]string{
	"k8s.io/apimachinery/pkg/api/resource.Quantity":                     "Quantity",
	"k8s.io/apimachinery/pkg/util/intstr.IntOrString":                   "IntOrString",
	"k8s.io/apimachinery/pkg/apis/meta/v1.Duration":                     "Duration",
	"k8s.io/apimachinery/pkg/apis/meta/v1.Time":                         "Time",
	"k8s.io/apimachinery/pkg/apis/meta/v1.FieldsV1":                     "FieldsV1",
	"k8s.io/apimachinery/pkg/runtime.RawExtension":                      "RawExtension",
	"github.com/tektoncd/pipeline/pkg/apis/pipeline/v1.ParamValue":      "ParamValue",
	"github.com/tektoncd/pipeline/pkg/apis/pipeline/v1beta1.ParamValue": "ParamValue",
}

// Short prefixes for struct names in the output.
var prefixes = map[string]string{
	"github.com/tektoncd/pipeline/pkg/apis/pipeline/v1":        "v1",
	"github.com/tektoncd/pipeline/pkg/apis/pipeline/v1beta1":   "v1beta1",
	"github.com/tektoncd/pipeline/pkg/apis/pipeline/pod":       "pod",
	"github.com/tektoncd/pipeline/pkg/apis/resolution/v1beta1": "resolutionv1beta1",
	"k8s.io/api/core/v1":                   "corev1",
	"k8s.io/apimachinery/pkg/apis/meta/v1": "metav1",
	"k8s.io/apimachinery/pkg/runtime":      "runtime",
}

type gen struct {
	types map[string][][]interface{}
	errs  []string
}

func (g *gen) fail(format string, args ...interface{}) string {
	g.errs = append(g.errs, fmt.Sprintf(format, args...))
	return "?"
}

func (g *gen) structName(t reflect.Type) string {
	p, ok := prefixes[t.PkgPath()]
	if !ok {
		p = strings.ReplaceAll(t.PkgPath(), "/", "_")
		g.fail("no short name for package %s (type %s); add it to prefixes", t.PkgPath(), t.Name())
	}
	return p + "." + t.Name()
}

// expr describes t as a type expression, registering the structs it reaches.
func (g *gen) expr(t reflect.Type) string {
	full := t.PkgPath() + "." + t.Name()
	if name, ok := custom[full]; ok {
		return "!" + name
	}
	pt := reflect.PointerTo(t)
	if t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface {
		if t.Implements(jsonMarshaler) || pt.Implements(jsonMarshaler) || t.Implements(jsonUnmarshaler) || pt.Implements(jsonUnmarshaler) {
			return g.fail("type %s has its own JSON methods that trusted.ts does not implement", full)
		}
		if t.Implements(textMarshaler) || pt.Implements(textMarshaler) || t.Implements(textUnmarshaler) || pt.Implements(textUnmarshaler) {
			return g.fail("type %s has text-marshalling methods that trusted.ts does not implement", full)
		}
	}
	switch t.Kind() {
	case reflect.String, reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return t.Kind().String()
	case reflect.Pointer:
		return "*" + g.expr(t.Elem())
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "bytes"
		}
		return "[]" + g.expr(t.Elem())
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return g.fail("map with non-string key %s", t)
		}
		return "map[string]" + g.expr(t.Elem())
	case reflect.Interface:
		if t.NumMethod() != 0 {
			return g.fail("non-empty interface %s", t)
		}
		return "any"
	case reflect.Struct:
		name := g.structName(t)
		if _, seen := g.types[name]; !seen {
			g.types[name] = nil // placeholder against recursion
			g.types[name] = g.fields(t)
		}
		return "@" + name
	default:
		return g.fail("unsupported kind %s (%s)", t.Kind(), t)
	}
}

type field struct {
	name      string
	tagged    bool
	depth     int
	index     []int
	typ       reflect.Type
	omitEmpty bool
	omitZero  bool
}

// collect walks t's fields depth first (the order encoding/json sorts its
// fields by), promoting embedded structs.
func (g *gen) collect(t reflect.Type, depth int, index []int, out *[]field, visiting map[reflect.Type]bool) {
	if visiting[t] {
		g.fail("embedding cycle through %s", t)
		return
	}
	visiting[t] = true
	defer delete(visiting, t)
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		idx := append(append([]int{}, index...), i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := sf.Type
		if sf.Anonymous {
			et := ft
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if !sf.IsExported() && et.Kind() != reflect.Struct {
				continue
			}
			if name == "" && et.Kind() == reflect.Struct {
				if ft.Kind() == reflect.Pointer {
					g.fail("%s embeds pointer %s: not supported by trusted.ts", t, ft)
				}
				if _, isCustom := custom[et.PkgPath()+"."+et.Name()]; isCustom {
					g.fail("%s embeds custom type %s", t, et)
				}
				g.collect(et, depth+1, idx, out, visiting)
				continue
			}
		} else if !sf.IsExported() {
			continue
		}
		f := field{name: name, tagged: name != "", depth: depth, index: idx, typ: ft}
		if f.name == "" {
			f.name = sf.Name
		}
		for _, o := range strings.Split(opts, ",") {
			switch o {
			case "omitempty":
				f.omitEmpty = true
			case "omitzero":
				f.omitZero = true
			case "string":
				g.fail("%s.%s uses the ,string option: not supported by trusted.ts", t, sf.Name)
			}
		}
		*out = append(*out, f)
	}
}

func (g *gen) fields(t reflect.Type) [][]interface{} {
	var all []field
	g.collect(t, 0, nil, &all, map[reflect.Type]bool{})
	// Go's dominance rules (encoding/json typeFields): among fields with one
	// name, the shallowest wins; at equal depth a tagged one wins; otherwise
	// all are dropped.
	byName := map[string][]field{}
	for _, f := range all {
		byName[f.name] = append(byName[f.name], f)
	}
	keep := map[string]*field{}
	for name, fs := range byName {
		sort.SliceStable(fs, func(i, j int) bool {
			if fs[i].depth != fs[j].depth {
				return fs[i].depth < fs[j].depth
			}
			return fs[i].tagged && !fs[j].tagged
		})
		if len(fs) > 1 && fs[0].depth == fs[1].depth && fs[0].tagged == fs[1].tagged {
			continue
		}
		f := fs[0]
		keep[name] = &f
	}
	var out [][]interface{}
	for _, f := range all {
		k := keep[f.name]
		if k == nil || !equalIndex(k.index, f.index) {
			continue
		}
		flags := ""
		if f.omitEmpty {
			flags += "o"
		}
		if f.omitZero {
			flags += "z"
			g.fail("%s.%s uses omitzero: not supported by trusted.ts", t, f.name)
		}
		out = append(out, []interface{}{f.name, g.expr(f.typ), flags})
	}
	return out
}

func equalIndex(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// kubernetesStruct tells a struct of Kubernetes' own packages (k8s.io/…) by
// the short prefix of its name.
func kubernetesStruct(name string) bool {
	prefix, _, _ := strings.Cut(name, ".")
	for path, p := range prefixes {
		if p == prefix {
			return strings.HasPrefix(path, "k8s.io/")
		}
	}
	return false
}

func main() {
	if len(os.Args) != 2 || (os.Args[1] != "tekton" && os.Args[1] != "kubernetes") {
		fmt.Fprintln(os.Stderr, "usage: gen-shapes tekton|kubernetes (writes src/policy/tekton-shapes.ts or kubernetes-shapes.ts to stdout)")
		os.Exit(2)
	}
	kubernetes := os.Args[1] == "kubernetes"
	g := &gen{types: map[string][][]interface{}{}}
	roots := map[string]string{
		"tekton.dev/v1/Task":            g.expr(reflect.TypeOf(v1.Task{})),
		"tekton.dev/v1/Pipeline":        g.expr(reflect.TypeOf(v1.Pipeline{})),
		"tekton.dev/v1beta1/StepAction": g.expr(reflect.TypeOf(v1beta1.StepAction{})),
	}
	if len(g.errs) > 0 {
		for _, e := range g.errs {
			fmt.Fprintln(os.Stderr, "gen-shapes:", e)
		}
		os.Exit(1)
	}
	names := make([]string, 0, len(g.types))
	for n := range g.types {
		if kubernetesStruct(n) == kubernetes {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	// A TypeScript module (tsc has no JSON imports here), one line per
	// struct so that a Tekton upgrade reads as a reviewable diff.
	var b strings.Builder
	b.WriteString("// Generated by hack/trusted/gen-shapes from github.com/tektoncd/pipeline v1.6.6; DO NOT EDIT.\n")
	if kubernetes {
		b.WriteString("// How Go's encoding/json sees the Kubernetes structs (k8s.io/api/core/v1, apimachinery's meta/v1)\n")
		b.WriteString("// that Tekton's kinds embed: containers, volumes, object metadata; in the form of\n")
		b.WriteString("// src/policy/tekton-shapes.ts, which holds Tekton's own structs. A file of its own because these\n")
		b.WriteString("// are Kubernetes' API types, which Tekton only embeds, and both tables in one would pass 600 lines.\n")
		b.WriteString("// A generated table, hence over 400 lines on purpose.\n\n")
		b.WriteString("import type { TektonField } from './tekton-shapes.js';\n\n")
		b.WriteString("export const KUBERNETES_TYPES: Readonly<Record<string, readonly TektonField[]>> = {\n")
	} else {
		b.WriteString("// How Go's encoding/json sees Tekton's own structs (v1, v1beta1) in the kinds whose signatures\n")
		b.WriteString("// src/policy/trusted.ts verifies, and which struct is each kind's root: per struct, its fields\n")
		b.WriteString("// in marshalling order as [json name, type, flags (o = omitempty)]. The Kubernetes structs\n")
		b.WriteString("// they embed are in src/policy/kubernetes-shapes.ts.\n\n")
		b.WriteString("export type TektonField = readonly [name: string, type: string, flags: string];\n\n")
		b.WriteString("export const TEKTON_ROOTS: Readonly<Record<string, string>> = {\n")
		rootNames := make([]string, 0, len(roots))
		for n := range roots {
			rootNames = append(rootNames, n)
		}
		sort.Strings(rootNames)
		for _, n := range rootNames {
			nb, _ := json.Marshal(n)
			vb, _ := json.Marshal(roots[n])
			b.WriteString("  " + string(nb) + ": " + string(vb) + ",\n")
		}
		b.WriteString("};\n\nexport const TEKTON_TYPES: Readonly<Record<string, readonly TektonField[]>> = {\n")
	}
	for _, n := range names {
		nb, _ := json.Marshal(n)
		b.WriteString("  " + string(nb) + ": [\n")
		for _, f := range g.types[n] {
			fb, _ := json.Marshal(f)
			b.WriteString("    " + string(fb) + ",\n")
		}
		b.WriteString("  ],\n")
	}
	b.WriteString("};\n")
	os.Stdout.WriteString(b.String())
}
