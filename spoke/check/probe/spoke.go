package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/scion-go/scion/spoke/check"
	"github.com/scion-go/scion/spoke/connect"
	"github.com/scion-go/scion/spoke/fleet"
)

// Secrets gives a broker-scoped secret's value by name.
type Secrets func(ctx context.Context, name string) (string, error)

// Opened is a spoke reached: a client of its API server over its tier.
type Opened struct {
	Tier      fleet.Tier
	Namespace string
	Config    *rest.Config
	Kube      kubernetes.Interface
}

// Opener reaches cluster c with the kubeconfig (and bastion key) that
// secrets give. Its errors keep a secret's failure (secretError) and an
// unreachable spoke (*fleet.UnreachableError) findable with errors.As.
type Opener func(ctx context.Context, c *fleet.Cluster, secrets Secrets) (*Opened, error)

// secretError is a secret that could not be had.
type secretError struct {
	name string
	err  error
}

func (e *secretError) Error() string { return fmt.Sprintf("secret %s: %v", e.name, e.err) }
func (e *secretError) Unwrap() error { return e.err }

// tracked wraps secrets so that their failures are told apart from the
// client's.
func tracked(s Secrets) Secrets {
	return func(ctx context.Context, name string) (string, error) {
		v, err := s(ctx, name)
		if err != nil {
			return "", &secretError{name, err}
		}
		return v, nil
	}
}

// PoolOpener reaches spokes with p (spoke/connect): every tier, the
// bastion's tunnel included, exactly as the broker's Job runner does.
func PoolOpener(p *connect.Pool) Opener {
	return func(ctx context.Context, c *fleet.Cluster, secrets Secrets) (*Opened, error) {
		s, err := p.Open(ctx, c, connect.Secrets(secrets))
		if err != nil {
			return nil, err
		}
		return &Opened{Tier: s.Tier, Namespace: s.Namespace, Config: s.Config, Kube: s.Clients.Kube}, nil
	}
}

// Spoke runs the spoke probes of cluster c (a block of profile's, or of
// the fleet file's when profile is "").
func Spoke(ctx context.Context, open Opener, c *fleet.Cluster, profile string, secrets Secrets) []check.Result {
	in := check.SpokeInput{Cluster: c.Name, Tier: string(c.Tier()), Profile: profile, Secret: c.KubeconfigSecret, Namespace: c.Namespace, Queue: c.Queue}
	sp, err := open(ctx, c, tracked(secrets))
	if err != nil {
		classify(&in, err)
		return check.Spoke(in)
	}
	in.Tier, in.Namespace = string(sp.Tier), sp.Namespace
	v, err := serverVersion(ctx, sp.Kube)
	if err != nil {
		classify(&in, err)
		return check.Spoke(in)
	}
	in.Version = v
	in.TokenExpires = boundExpiry(sp.Config.BearerToken)
	in.Answers = askSelf(ctx, sp.Kube, sp.Namespace, check.SpokeQuestions(c.Queue))
	return check.Spoke(in)
}

func classify(in *check.SpokeInput, err error) {
	var se *secretError
	var ue *fleet.UnreachableError
	switch {
	case errors.As(err, &ue):
		in.Unreachable = ue.Error()
	case errors.As(err, &se):
		in.SecretErr = se.err.Error()
	case errors.Is(err, context.DeadlineExceeded):
		in.Unreachable = fmt.Sprintf("spoke %s (%s tier) unreachable: %v", in.Cluster, in.Tier, err)
	default:
		in.OpenErr = err.Error()
	}
}

// serverVersion is GET /version with ctx (discovery's own call takes
// none).
func serverVersion(ctx context.Context, kc kubernetes.Interface) (string, error) {
	b, err := kc.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return "", err
	}
	var v struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return "", fmt.Errorf("GET /version: %w", err)
	}
	return v.GitVersion, nil
}
