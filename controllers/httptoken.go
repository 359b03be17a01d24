package controllers

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kube-namesrv/kube-namesrv/api/v1alpha1"
	"github.com/kube-namesrv/kube-namesrv/controllers/render"
	"github.com/kube-namesrv/kube-namesrv/namesrv/httpapi"
)

// tokenBytes of randomness in a bearer token: 256 bits, 43 characters.
const tokenBytes = 32

// httpToken returns the bearer token the operator presents to the peers of
// a cluster whose spec.authorization puts HTTP endpoints behind one, and
// "" for other clusters. The token lives in the Secret <name>-http-token,
// which the peers mount: it is created here, random and owned by the
// cluster, before the StatefulSet that mounts it is applied, and from then
// on only read, so it survives reconciles, operator restarts and upgrades.
//
// The Secret is read around the cache: caching Secrets would need list and
// watch on every Secret the operator can see, while a read by name needs
// only get. So that a cluster at rest sends the API server nothing, the
// token is kept in memory (httpTokens) and the Secret read again only when
// a peer refused the token (it was rotated or the Secret replaced: refused)
// and every tokenRereadRounds broker rounds, which replaces a Secret
// deleted to rotate the token.
//
// A Secret of that name that is not this cluster's, or whose token the
// peers would refuse, is a problem: the operator cannot change Secrets, so
// someone must delete it.
func (r *NameServerClusterReconciler) httpToken(ctx context.Context, c *v1alpha1.NameServerCluster, refused bool) (string, *problem, error) {
	name := client.ObjectKeyFromObject(c)
	if !render.HTTPTokenEnabled(c) {
		r.tokens.forget(name)
		return "", nil, nil
	}
	now := r.Clock.Now()
	if token, ok := r.tokens.get(name, c.UID, now, tokenRereadRounds*render.BrokerRound(c)); ok && !refused {
		return token, nil, nil
	}
	r.tokens.forget(name)
	token, p, err := r.readHTTPToken(ctx, c)
	if token != "" {
		r.tokens.put(name, c.UID, token, now)
	}
	return token, p, err
}

// tokenRereadRounds is how many broker rounds a token is used from memory
// before its Secret is read again: ten, five minutes at the default round.
const tokenRereadRounds = 10

// readHTTPToken reads the token off its Secret, which it creates when
// missing.
func (r *NameServerClusterReconciler) readHTTPToken(ctx context.Context, c *v1alpha1.NameServerCluster) (string, *problem, error) {
	key := client.ObjectKey{Namespace: c.Namespace, Name: render.HTTPTokenSecretName(c)}
	s := &corev1.Secret{}
	err := r.APIReader.Get(ctx, key, s)
	switch {
	case apierrors.IsNotFound(err):
		return r.createHTTPToken(ctx, c, key)
	case err != nil:
		return "", nil, fmt.Errorf("reading Secret %s: %w", key, err)
	}
	if !metav1.IsControlledBy(s, c) {
		return "", &problem{Reason: v1alpha1.RefusalNotOwned, Retry: true, Related: s, Message: fmt.Sprintf(
			"Secret %s exists and is not this cluster's (%s); the peers would accept its tokens, which the operator does not know: delete or rename it", key, ownerOf(s))}, nil
	}
	tokens, err := httpapi.ParseTokens(s.Data[render.HTTPTokenKey])
	if err != nil {
		return "", &problem{Reason: v1alpha1.RefusalHTTPToken, Retry: true, Related: s, Message: fmt.Sprintf(
			"Secret %s: key %s holds no token the peers accept (%v): delete the Secret and the operator creates a new one", key, render.HTTPTokenKey, err)}, nil
	}
	// The first line: a rotation by hand lists the new token after the
	// old one until every peer accepts it (docs/security.md).
	return tokens[0], nil, nil
}

// createHTTPToken creates the Secret with a new random token.
func (r *NameServerClusterReconciler) createHTTPToken(ctx context.Context, c *v1alpha1.NameServerCluster, key client.ObjectKey) (string, *problem, error) {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", nil, fmt.Errorf("generating the HTTP token of %s/%s: %w", c.Namespace, c.Name, err)
	}
	token := base64.RawURLEncoding.EncodeToString(b)
	s := render.HTTPTokenSecret(c, token)
	if err := r.Create(ctx, s); err != nil {
		if p, ok := refusal(err, "Secret", key, s); ok {
			return "", &p, nil
		}
		return "", nil, fmt.Errorf("creating Secret %s: %w", key, err)
	}
	r.event(c, s, corev1.EventTypeNormal, v1alpha1.EventCreated, "Create", "created Secret %s with a new HTTP bearer token", key)
	return token, nil, nil
}

// httpTokens keeps each cluster's token between reconciles, by cluster
// name; a cluster recreated under the same name (another UID) reads its own.
type httpTokens struct {
	mu sync.Mutex
	at map[types.NamespacedName]tokenEntry
}

type tokenEntry struct {
	uid   types.UID
	token string
	read  time.Time
}

// get is a cluster's token, if read less than maxAge before now.
func (t *httpTokens) get(name types.NamespacedName, uid types.UID, now time.Time, maxAge time.Duration) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.at[name]
	if !ok || e.uid != uid || now.Sub(e.read) >= maxAge {
		return "", false
	}
	return e.token, true
}

// put remembers a cluster's token, read at now.
func (t *httpTokens) put(name types.NamespacedName, uid types.UID, token string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.at == nil {
		t.at = map[types.NamespacedName]tokenEntry{}
	}
	t.at[name] = tokenEntry{uid: uid, token: token, read: now}
}

// forget drops a cluster's token: the next reconcile reads its Secret.
func (t *httpTokens) forget(name types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.at, name)
}
