// Command decode reads resolved resources exactly as Tekton Pipelines v1.6.6
// reads what a remote resolver returns, and prints what it read. It is the
// ground truth test/unit/one-reading-property.test.ts holds
// src/policy/one-reading.ts to: whatever the controller accepts must read
// the same here.
//
//	decode < docs.json
//
// stdin is a JSON array of base64 documents (the resolver's bytes); stdout is
// a JSON array with one result a document, in order:
//
//	{"json": <the document as Tekton reads it>, "typed": "Task"}
//	{"json": ..., "typedError": "..."}
//	{"error": "..."}
//
// Tekton's reconciler (pkg/remoteresolution/remote/resolution →
// pkg/remote/resolution.ResolvedRequest) decodes the bytes with
// serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).
// UniversalDeserializer().Decode(data, nil, nil): data whose first
// non-space character is '{' is read as JSON, anything else as YAML through
// sigs.k8s.io/yaml's YAMLToJSON (go-yaml v2), with YAMLToJSONStrict for
// duplicate keys and sigs.k8s.io/json's strict, case-sensitive decoding.
// "json" is that same Decode into an Unstructured target, so the one code
// path Tekton runs produces it, just without Tekton's types; "typed" is the
// Go type the real call (into Tekton's scheme) produced, and "typedError" its
// error (an unknown field, a wrong type: Tekton's semantics, not a reading).
package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"

	"github.com/tektoncd/pipeline/pkg/client/clientset/versioned/scheme"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

type result struct {
	JSON       json.RawMessage `json:"json,omitempty"`
	Error      string          `json:"error,omitempty"`
	Typed      string          `json:"typed,omitempty"`
	TypedError string          `json:"typedError,omitempty"`
}

func decode(data []byte) (r result) {
	defer func() {
		if p := recover(); p != nil {
			r = result{Error: fmt.Sprintf("panic: %v", p)}
		}
	}()
	codecs := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict)
	u := &unstructured.Unstructured{}
	if _, _, err := codecs.UniversalDeserializer().Decode(data, nil, u); err != nil {
		return result{Error: err.Error()}
	}
	b, err := json.Marshal(u.Object)
	if err != nil {
		return result{Error: "marshalling what was read: " + err.Error()}
	}
	r = result{JSON: b}
	obj, _, err := codecs.UniversalDeserializer().Decode(data, nil, nil)
	if err != nil {
		r.TypedError = err.Error()
	} else {
		r.Typed = reflect.TypeOf(obj).Elem().Name()
	}
	return r
}

func main() {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "decode:", err)
		os.Exit(1)
	}
	var docs []string
	if err := json.Unmarshal(in, &docs); err != nil {
		fmt.Fprintln(os.Stderr, "decode: stdin is not a JSON array of base64 strings:", err)
		os.Exit(1)
	}
	out := make([]result, len(docs))
	for i, d := range docs {
		data, err := base64.StdEncoding.DecodeString(d)
		if err != nil {
			fmt.Fprintf(os.Stderr, "decode: document %d is not base64: %v\n", i, err)
			os.Exit(1)
		}
		out[i] = decode(data)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "decode:", err)
		os.Exit(1)
	}
}
