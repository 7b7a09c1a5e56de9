package probe

import (
	"context"
	"sync"

	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/scion-go/scion/spoke/check"
)

func attrs(ns string, x check.Question) *authzv1.ResourceAttributes {
	return &authzv1.ResourceAttributes{Namespace: ns, Verb: x.Verb, Group: x.Group, Resource: x.Resource, Subresource: x.Subresource}
}

// askSelf asks, with SelfSubjectAccessReviews, whether the client's own
// identity may do each of qs in ns. The reviews run concurrently: over a
// far tier each is a round trip.
func askSelf(ctx context.Context, kc kubernetes.Interface, ns string, qs []check.Question) []check.Answer {
	return each(qs, func(x check.Question) check.Answer {
		r, err := kc.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authzv1.SelfSubjectAccessReview{
			Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs(ns, x)}}, metav1.CreateOptions{})
		if err != nil {
			return check.Answer{Question: x, Err: err.Error()}
		}
		return check.Answer{Question: x, Allowed: r.Status.Allowed, Reason: r.Status.Reason}
	})
}

// askFor asks, with SubjectAccessReviews, whether user (with groups) may
// do each of qs in ns. A review the client may not create at all is
// returned as refused (the first one's error), not as answers.
func askFor(ctx context.Context, kc kubernetes.Interface, user string, groups []string, ns string, qs []check.Question) (as []check.Answer, refused error) {
	var mu sync.Mutex
	as = each(qs, func(x check.Question) check.Answer {
		r, err := kc.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{
			Spec: authzv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: attrs(ns, x)}}, metav1.CreateOptions{})
		if err != nil {
			if isForbidden(err) {
				mu.Lock()
				if refused == nil {
					refused = err
				}
				mu.Unlock()
			}
			return check.Answer{Question: x, Err: err.Error()}
		}
		return check.Answer{Question: x, Allowed: r.Status.Allowed, Reason: r.Status.Reason}
	})
	if refused != nil {
		return nil, refused
	}
	return as, nil
}

// each runs f for every question, a few at a time, keeping the order.
func each(qs []check.Question, f func(check.Question) check.Answer) []check.Answer {
	out := make([]check.Answer, len(qs))
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i, x := range qs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i] = f(x)
		}()
	}
	wg.Wait()
	return out
}
