// Command sign signs Tekton resources for Trusted Resources verification, and
// prints the checksums Tekton computes for them, with Tekton's own code
// (github.com/tektoncd/pipeline v1.6.6) and sigstore's signers, as
// `tkn task sign` does. It is the ground truth test/unit/trusted.test.ts
// holds src/policy/trusted.ts to, and a way to sign a catalog:
//
//	sign --key private.pem FILE.yaml > signed.yaml
//	sign --checksum FILE.yaml            # hex sha256 Tekton verifies against
//	sign --marshal FILE.yaml             # the JSON that sha256 is taken of
//	sign --checksum-batch [--with-json] < objects.jsonl
//
// --checksum-batch reads one JSON document a line, each as the YAML of that
// document would be read, and writes one JSON line each: {"checksum": hex}
// or {"error": message} (and "json", the marshalled form, with --with-json).
//
// A resource is read as Tekton reads resolved content (the resolvers'
// strict UniversalDeserializer with Tekton's scheme), defaulted with the
// default configuration (SetDefaults, as the reconciler does before it
// verifies), its ownerReferences dropped, and checksummed by its Checksum()
// method. Kinds: tekton.dev/v1 Task and Pipeline, tekton.dev/v1beta1
// StepAction. --no-defaults skips SetDefaults (what tkn signs).
//
// The signed output is the input document with the annotation
// tekton.dev/signature set, re-emitted as YAML (keys sorted); -o json emits
// JSON instead. The private key is a PEM file sigstore loads (PKCS#8, EC,
// PKCS#1 RSA, ed25519, or a cosign-encrypted key with PRIVATE_PASSWORD set).
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"github.com/tektoncd/pipeline/pkg/apis/pipeline/v1beta1"
	"github.com/tektoncd/pipeline/pkg/client/clientset/versioned/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/yaml"
)

const signatureAnnotation = "tekton.dev/signature"

type hashable interface {
	metav1.Object
	Checksum() ([]byte, error)
}

var noDefaults bool

// load decodes data the way Tekton's resolution does and returns the
// object as the reconciler has it when it verifies.
func load(data []byte) (hashable, error) {
	codecs := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict)
	obj, _, err := codecs.UniversalDeserializer().Decode(data, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	ctx := context.Background()
	var h hashable
	switch o := obj.(type) {
	case *v1.Task:
		if !noDefaults {
			o.SetDefaults(ctx)
		}
		h = o
	case *v1.Pipeline:
		if !noDefaults {
			o.SetDefaults(ctx)
		}
		h = o
	case *v1beta1.StepAction:
		if !noDefaults {
			o.SetDefaults(ctx)
		}
		h = o
	default:
		return nil, fmt.Errorf("unsupported kind %T (want tekton.dev/v1 Task or Pipeline, tekton.dev/v1beta1 StepAction)", obj)
	}
	h.SetOwnerReferences(nil)
	return h, nil
}

// marshal returns the JSON Checksum() hashes (it is not exported by
// Tekton: pkg/apis/pipeline/internal/checksum), checked against it.
func marshal(h hashable) ([]byte, []byte, error) {
	sum, err := h.Checksum()
	if err != nil {
		return nil, nil, err
	}
	meta := metav1.ObjectMeta{Name: h.GetName(), GenerateName: h.GetGenerateName(), Namespace: h.GetNamespace()}
	if h.GetLabels() != nil {
		meta.Labels = map[string]string{}
		for k, v := range h.GetLabels() {
			meta.Labels[k] = v
		}
	}
	meta.Annotations = map[string]string{}
	for k, v := range h.GetAnnotations() {
		meta.Annotations[k] = v
	}
	for _, k := range []string{"kubectl-client-side-apply", "kubectl.kubernetes.io/last-applied-configuration", signatureAnnotation} {
		delete(meta.Annotations, k)
	}
	var pre interface{}
	switch o := h.(type) {
	case *v1.Task:
		pre = v1.Task{TypeMeta: metav1.TypeMeta{APIVersion: "tekton.dev/v1", Kind: "Task"}, ObjectMeta: meta, Spec: o.Spec}
	case *v1.Pipeline:
		pre = v1.Pipeline{TypeMeta: metav1.TypeMeta{APIVersion: "tekton.dev/v1", Kind: "Pipeline"}, ObjectMeta: meta, Spec: o.Spec}
	case *v1beta1.StepAction:
		pre = v1beta1.StepAction{TypeMeta: metav1.TypeMeta{APIVersion: "tekton.dev/v1beta1", Kind: "StepAction"}, ObjectMeta: meta, Spec: o.Spec}
	}
	b, err := json.Marshal(pre)
	if err != nil {
		return nil, nil, err
	}
	if got := sha256.Sum256(b); !bytes.Equal(got[:], sum) {
		return nil, nil, errors.New("internal: marshalled JSON does not hash to Checksum()")
	}
	return sum, b, nil
}

func sign(keyFile string, data []byte, output string) ([]byte, error) {
	h, err := load(data)
	if err != nil {
		return nil, err
	}
	sum, err := h.Checksum()
	if err != nil {
		return nil, err
	}
	pass := cryptoutils.SkipPassword
	if pw, ok := os.LookupEnv("PRIVATE_PASSWORD"); ok {
		pass = cryptoutils.StaticPasswordFunc([]byte(pw))
	}
	sv, err := signature.LoadSignerVerifierFromPEMFile(keyFile, crypto.SHA256, pass)
	if err != nil {
		return nil, fmt.Errorf("loading key: %w", err)
	}
	sig, err := sv.SignMessage(bytes.NewReader(sum))
	if err != nil {
		return nil, err
	}
	if err := sv.VerifySignature(bytes.NewReader(sig), bytes.NewReader(sum)); err != nil {
		return nil, fmt.Errorf("internal: own signature does not verify: %w", err)
	}
	// Set the annotation in the document itself, so everything else it
	// holds stays as written.
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, err
	}
	var doc map[string]interface{}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	md, _ := doc["metadata"].(map[string]interface{})
	if md == nil {
		md = map[string]interface{}{}
		doc["metadata"] = md
	}
	ann, _ := md["annotations"].(map[string]interface{})
	if ann == nil {
		ann = map[string]interface{}{}
		md["annotations"] = ann
	}
	ann[signatureAnnotation] = base64.StdEncoding.EncodeToString(sig)
	out, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	// The signed document must give the same checksum as the input.
	h2, err := load(out)
	if err != nil {
		return nil, fmt.Errorf("internal: signed document does not load: %w", err)
	}
	if sum2, err := h2.Checksum(); err != nil || !bytes.Equal(sum2, sum) {
		return nil, errors.New("internal: signed document checksums differently")
	}
	if output == "json" {
		return append(out, '\n'), nil
	}
	y, err := yaml.JSONToYAML(out)
	if err != nil {
		return nil, err
	}
	// go-yaml writes some strings (U+2028, …) in forms YAML 1.1 reads back
	// differently: refuse rather than write a signature that does not verify.
	if h3, err := load(y); err != nil {
		return nil, fmt.Errorf("the YAML rendering does not load (use -o json): %w", err)
	} else if sum3, err := h3.Checksum(); err != nil || !bytes.Equal(sum3, sum) {
		return nil, errors.New("the YAML rendering does not read back the same (use -o json)")
	}
	return y, nil
}

type batchResult struct {
	Checksum string `json:"checksum,omitempty"`
	JSON     string `json:"json,omitempty"`
	Error    string `json:"error,omitempty"`
}

func batch(in io.Reader, out io.Writer, withJSON bool) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	w := bufio.NewWriter(out)
	defer w.Flush()
	enc := json.NewEncoder(w)
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var r batchResult
		// Each line is read as the YAML of a document would be: sigs.k8s.io/yaml
		// turns YAML into JSON with json.Marshal of the generic value (keys
		// sorted, HTML-escaped), which is what raw values (ParamValue's
		// fallback, RawExtension) keep.
		var generic interface{}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		err := dec.Decode(&generic)
		var h hashable
		if err == nil {
			line, err = json.Marshal(generic)
		}
		if err == nil {
			h, err = load(line)
		}
		if err == nil {
			var sum, js []byte
			sum, js, err = marshal(h)
			if err == nil {
				r.Checksum = hex.EncodeToString(sum)
				if withJSON {
					r.JSON = string(js)
				}
			}
		}
		if err != nil {
			r.Error = err.Error()
		}
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return sc.Err()
}

func main() {
	key := flag.String("key", "", "PEM private key to sign FILE with")
	checksum := flag.Bool("checksum", false, "print the hex checksum of FILE")
	marshalOnly := flag.Bool("marshal", false, "print the JSON FILE's checksum is taken of")
	batchMode := flag.Bool("checksum-batch", false, "read one JSON object a line on stdin, write one JSON line each: {checksum} or {error}")
	withJSON := flag.Bool("with-json", false, "with --checksum-batch: add the marshalled JSON")
	output := flag.String("o", "yaml", "signed output format: yaml or json")
	flag.BoolVar(&noDefaults, "no-defaults", false, "skip SetDefaults (checksum the object as decoded, as tkn signs it)")
	flag.Parse()
	if err := run(*key, *checksum, *marshalOnly, *batchMode, *withJSON, *output); err != nil {
		fmt.Fprintln(os.Stderr, "sign:", err)
		os.Exit(1)
	}
}

func run(key string, checksum, marshalOnly, batchMode, withJSON bool, output string) error {
	if batchMode {
		return batch(os.Stdin, os.Stdout, withJSON)
	}
	if flag.NArg() != 1 {
		return errors.New("usage: sign (--key PEM | --checksum | --marshal) FILE.yaml, or sign --checksum-batch < lines.jsonl")
	}
	data, err := os.ReadFile(flag.Arg(0))
	if err != nil {
		return err
	}
	switch {
	case checksum || marshalOnly:
		h, err := load(data)
		if err != nil {
			return err
		}
		sum, js, err := marshal(h)
		if err != nil {
			return err
		}
		if marshalOnly {
			_, err = fmt.Printf("%s\n", js)
		} else {
			_, err = fmt.Println(hex.EncodeToString(sum))
		}
		return err
	case key != "":
		out, err := sign(key, data, output)
		if err != nil {
			return err
		}
		_, err = os.Stdout.Write(out)
		return err
	default:
		return errors.New("one of --key, --checksum, --marshal, --checksum-batch is needed")
	}
}
