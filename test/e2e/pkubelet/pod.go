package pkubelet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const (
	// sandboxRetry is how soon a Pod whose volumes could not be prepared
	// (a missing ConfigMap, say) is tried again.
	sandboxRetry = time.Second
	// stopGrace bounds SIGTERM-to-SIGKILL when the kubelet itself stops.
	stopGrace = 2 * time.Second
)

// podWorker owns one Pod incarnation (one UID): its address, directories,
// volumes, container processes and status.
type podWorker struct {
	k         *Kubelet
	uid       types.UID
	namespace string
	name      string
	log       *slog.Logger
	dir       string

	updated   chan struct{}
	refresh   chan struct{}
	dirty     chan struct{}
	vanished  chan struct{}
	vanishOne sync.Once

	mu           sync.Mutex
	pod          *corev1.Pod // latest seen
	hostNum      int
	bindIP       string
	reportedIP   string
	sandboxReady bool
	sandboxErr   string
	startTime    metav1.Time
	containers   []*container
	volumes      []*sourceVolume
}

// sourceVolume is a configMap or secret volume kept in sync with its object.
type sourceVolume struct {
	kind        string // "ConfigMap" or "Secret"
	name        string
	dir         string
	items       []corev1.KeyToPath
	defaultMode *int32
	optional    bool
}

func newPodWorker(k *Kubelet, pod *corev1.Pod) *podWorker {
	w := &podWorker{
		k:         k,
		uid:       pod.UID,
		namespace: pod.Namespace,
		name:      pod.Name,
		log:       k.log.With("pod", pod.Namespace+"/"+pod.Name, "uid", pod.UID),
		dir:       k.PodDir(pod),
		updated:   make(chan struct{}, 1),
		refresh:   make(chan struct{}, 1),
		dirty:     make(chan struct{}, 1),
		vanished:  make(chan struct{}),
		pod:       pod,
	}
	for i := range pod.Spec.Containers {
		w.containers = append(w.containers, newContainer(w, &pod.Spec.Containers[i]))
	}
	return w
}

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (w *podWorker) update(pod *corev1.Pod) {
	w.mu.Lock()
	w.pod = pod
	w.mu.Unlock()
	notify(w.updated)
}

func (w *podWorker) latest() *corev1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pod
}

// vanish stops the Pod's processes at once: it was force-deleted or
// replaced, so there is no one left to report to.
func (w *podWorker) vanish()         { w.vanishOne.Do(func() { close(w.vanished) }) }
func (w *podWorker) requestRefresh() { notify(w.refresh) }
func (w *podWorker) markDirty()      { notify(w.dirty) }

func (w *podWorker) projects(kind, name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, v := range w.volumes {
		if v.kind == kind && v.name == name {
			return true
		}
	}
	return false
}

// run drives the Pod from setup to the kubelet's final delete.
func (w *podWorker) run() {
	statusCtx, stopStatus := context.WithCancel(w.k.ctx)
	statusDone := make(chan struct{})
	go func() {
		defer close(statusDone)
		w.statusLoop(statusCtx)
	}()
	stopStatusLoop := func() {
		stopStatus()
		<-statusDone
	}
	defer stopStatusLoop()

	var (
		containersCtx, stopContainers = context.WithCancel(context.Background())
		containersWG                  sync.WaitGroup
		retry                         <-chan time.Time
	)
	defer stopContainers()
	terminate := func(grace time.Duration) {
		for _, c := range w.containers {
			c.setGrace(grace)
		}
		stopContainers()
		containersWG.Wait()
		w.release()
	}
	trySetup := func() {
		if err := w.setup(w.k.ctx); err != nil {
			w.log.Warn("pod setup", "err", err)
			w.mu.Lock()
			w.sandboxErr = err.Error()
			w.mu.Unlock()
			w.markDirty()
			retry = time.After(sandboxRetry)
			return
		}
		retry = nil
		for _, c := range w.containers {
			containersWG.Add(1)
			go func() {
				defer containersWG.Done()
				c.run(containersCtx)
			}()
		}
		w.markDirty()
	}

	if w.latest().DeletionTimestamp == nil {
		trySetup()
	}
	for {
		if pod := w.latest(); pod.DeletionTimestamp != nil {
			g := time.Duration(0)
			if pod.DeletionGracePeriodSeconds != nil {
				g = time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
			}
			w.log.Info("terminating", "grace", g)
			terminate(g)
			stopStatusLoop()
			w.finalDelete(pod)
			return
		}
		select {
		case <-w.k.ctx.Done():
			terminate(stopGrace)
			return
		case <-w.vanished:
			w.log.Info("pod vanished from the API; killing its processes")
			terminate(0)
			return
		case <-w.updated:
			w.markDirty()
		case <-retry:
			trySetup()
		case <-w.refresh:
			if err := w.syncVolumes(w.k.ctx); err != nil {
				w.log.Warn("refresh volumes", "err", err)
			}
		}
	}
}

// setup allocates the address, creates the directories and projects the
// volumes. It is safe to call again after a failure.
func (w *podWorker) setup(ctx context.Context) error {
	w.mu.Lock()
	allocated := w.hostNum != 0
	w.mu.Unlock()
	if !allocated {
		n, err := w.k.ipam.allocate(w.uid)
		if err != nil {
			return err
		}
		w.mu.Lock()
		w.hostNum = n
		w.bindIP = fmt.Sprintf("%s%d", w.k.cfg.IPPrefix, n)
		w.reportedIP = fmt.Sprintf("%s%d", w.k.cfg.ReportedIPPrefix, n)
		w.startTime = metav1.NewTime(time.Now().UTC().Truncate(time.Second))
		w.mu.Unlock()
	}
	if err := os.MkdirAll(w.dir, 0o755); err != nil {
		return fmt.Errorf("create pod dir: %w", err)
	}
	pod := w.latest()
	var volumes []*sourceVolume
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		dir := volumeHostDir(w.k.cfg.RootDir, w.dir, pod.Namespace, v)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("volume %s: %w", v.Name, err)
		}
		switch {
		case v.ConfigMap != nil:
			volumes = append(volumes, &sourceVolume{kind: "ConfigMap", name: v.ConfigMap.Name, dir: dir,
				items: v.ConfigMap.Items, defaultMode: v.ConfigMap.DefaultMode, optional: isTrue(v.ConfigMap.Optional)})
		case v.Secret != nil:
			volumes = append(volumes, &sourceVolume{kind: "Secret", name: v.Secret.SecretName, dir: dir,
				items: v.Secret.Items, defaultMode: v.Secret.DefaultMode, optional: isTrue(v.Secret.Optional)})
		}
	}
	w.mu.Lock()
	w.volumes = volumes
	w.mu.Unlock()
	if err := w.syncVolumes(ctx); err != nil {
		return err
	}

	w.mu.Lock()
	w.sandboxReady, w.sandboxErr = true, ""
	ip := w.bindIP
	w.mu.Unlock()
	if names := podHostNames(pod, w.k.cfg.ClusterDomain); names != nil {
		w.k.setHostEntry(w.uid, ip, names)
	}
	return nil
}

// syncVolumes projects the current content of every configMap and secret
// volume; unchanged content is left untouched.
func (w *podWorker) syncVolumes(ctx context.Context) error {
	w.mu.Lock()
	volumes := w.volumes
	w.mu.Unlock()
	var errs []error
	for _, v := range volumes {
		payload, err := w.payload(ctx, v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s volume %s: %w", v.kind, v.name, err))
			continue
		}
		changed, err := writeAtomic(v.dir, payload)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s volume %s: %w", v.kind, v.name, err))
			continue
		}
		if changed {
			w.log.Info("projected volume", "kind", v.kind, "name", v.name, "files", len(payload))
		}
	}
	return errors.Join(errs...)
}

func (w *podWorker) payload(ctx context.Context, v *sourceVolume) (map[string]projectedFile, error) {
	var data map[string][]byte
	var err error
	switch v.kind {
	case "ConfigMap":
		var cm *corev1.ConfigMap
		if cm, err = w.k.cfg.Client.CoreV1().ConfigMaps(w.namespace).Get(ctx, v.name, metav1.GetOptions{}); err == nil {
			data = configMapData(cm)
		}
	case "Secret":
		var s *corev1.Secret
		if s, err = w.k.cfg.Client.CoreV1().Secrets(w.namespace).Get(ctx, v.name, metav1.GetOptions{}); err == nil {
			data = s.Data
		}
	}
	if apierrors.IsNotFound(err) && v.optional {
		return map[string]projectedFile{}, nil
	}
	if err != nil {
		return nil, err
	}
	return keyPayload(data, v.items, v.defaultMode, v.optional)
}

// release returns the address and drops the hosts entry.
func (w *podWorker) release() {
	w.mu.Lock()
	n := w.hostNum
	w.hostNum = 0
	w.mu.Unlock()
	if n != 0 {
		w.k.setHostEntry(w.uid, "", nil)
		w.k.ipam.release(n)
	}
}

// finalDelete is the kubelet's part of a graceful deletion: the API server
// only sets deletionTimestamp, and the object stays until the kubelet deletes
// it with grace 0 once the containers are gone. The UID precondition keeps a
// new incarnation under the same name safe.
func (w *podWorker) finalDelete(pod *corev1.Pod) {
	uid := pod.UID
	backoff := 100 * time.Millisecond
	for w.k.ctx.Err() == nil {
		err := w.k.cfg.Client.CoreV1().Pods(pod.Namespace).Delete(w.k.ctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: new(int64),
			Preconditions:      &metav1.Preconditions{UID: &uid},
		})
		if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			w.log.Info("deleted")
			return
		}
		w.log.Warn("final delete", "err", err)
		select {
		case <-w.k.ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}
