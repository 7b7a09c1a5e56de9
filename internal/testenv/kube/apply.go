package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// ApplyCRDs creates the CustomResourceDefinitions of every *.yaml file
// in dir and waits until each is Established (served).
func (s *Spoke) ApplyCRDs(ctx context.Context, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no CRD files in %s", dir)
	}
	sort.Strings(files)
	var names []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		objs, err := decodeYAML(data)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		for _, o := range objs {
			if o.GetKind() != "CustomResourceDefinition" {
				return fmt.Errorf("%s: a %s, not a CustomResourceDefinition", f, o.GetKind())
			}
			_, err := s.Dynamic.Resource(crdResource).Create(ctx, o, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("create CRD %s: %w", o.GetName(), err)
			}
			names = append(names, o.GetName())
		}
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, n := range names {
		err := poll(wctx, func() (bool, error) {
			o, err := s.Dynamic.Resource(crdResource).Get(wctx, n, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		}, func() string { return "CRD " + n + " not established" })
		if err != nil {
			return err
		}
	}
	return nil
}

// ApplyYAML creates every object of a multi-document YAML, in order,
// as the admin (kubectl create -f, without its client-side schema
// checks: the API server's are the ones that count). A Namespace that
// exists already is taken as it is; any other existing object is an
// error.
func (s *Spoke) ApplyYAML(ctx context.Context, data []byte) error {
	objs, err := decodeYAML(data)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(s.Client.Discovery()))
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("%s %s: %w", gvk.Kind, o.GetName(), err)
		}
		ri := s.Dynamic.Resource(m.Resource)
		if ns := o.GetNamespace(); ns != "" {
			_, err = ri.Namespace(ns).Create(ctx, o, metav1.CreateOptions{})
		} else {
			_, err = ri.Create(ctx, o, metav1.CreateOptions{})
		}
		if apierrors.IsAlreadyExists(err) && gvk.Kind == "Namespace" {
			continue
		}
		if err != nil {
			return fmt.Errorf("create %s %s: %w", gvk.Kind, o.GetName(), err)
		}
	}
	return nil
}

// decodeYAML splits a multi-document YAML into objects, skipping empty
// documents.
func decodeYAML(data []byte) ([]*unstructured.Unstructured, error) {
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 64*1024)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := d.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
}
