package pkubelet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// Kubelet runs the Pods bound to one fake Node as local processes.
type Kubelet struct {
	cfg         Config
	log         *slog.Logger
	ipam        *ipam
	nodeIP      string
	allocatable corev1.ResourceList

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	workers map[types.UID]*podWorker
	// finished remembers Pods whose worker is done, so that a late event
	// for them does not start a new worker.
	finished map[types.UID]bool
	hosts    map[types.UID]hostEntry
	hostsMu  sync.Mutex // serialises writes of cfg.HostsFile

	stopOnce sync.Once
}

// New validates cfg; nothing runs before Start.
func New(cfg Config) (*Kubelet, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Kubelet{
		cfg:    c,
		log:    c.Logger,
		ipam:   newIPAM(),
		nodeIP: c.ReportedIPPrefix + "1",
		allocatable: corev1.ResourceList{
			corev1.ResourceCPU:              resource.MustParse("64"),
			corev1.ResourceMemory:           resource.MustParse("256Gi"),
			corev1.ResourcePods:             resource.MustParse("250"),
			corev1.ResourceEphemeralStorage: resource.MustParse("1Ti"),
		},
		workers:  map[types.UID]*podWorker{},
		finished: map[types.UID]bool{},
		hosts:    map[types.UID]hostEntry{},
	}, nil
}

// NodeName is the name of the Node this kubelet registers.
func (k *Kubelet) NodeName() string { return k.cfg.NodeName }

// NodeIP is the address reported as the Node's InternalIP and Pods' hostIP.
func (k *Kubelet) NodeIP() string { return k.nodeIP }

// Start registers the Node, makes it Ready and starts watching Pods. It
// returns once the Node is Ready and the caches are synced; the kubelet then
// runs until ctx is done or Stop is called.
func (k *Kubelet) Start(ctx context.Context) error {
	if k.ctx != nil {
		return errors.New("pkubelet: already started")
	}
	k.ctx, k.cancel = context.WithCancel(ctx)
	if err := k.registerNode(k.ctx); err != nil {
		k.cancel()
		return err
	}
	if err := k.writeHosts(); err != nil {
		k.cancel()
		return err
	}

	podFactory := informers.NewSharedInformerFactoryWithOptions(k.cfg.Client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", k.cfg.NodeName).String()
		}))
	pods := podFactory.Core().V1().Pods().Informer()
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.onPod(obj) },
		UpdateFunc: func(_, obj any) { k.onPod(obj) },
		DeleteFunc: k.onPodDelete,
	}); err != nil {
		k.cancel()
		return fmt.Errorf("pkubelet: pod handler: %w", err)
	}

	// ConfigMaps and Secrets are watched only as change notifications: a
	// referencing Pod re-reads them from the API, so the newest content wins
	// even when events and the initial projection race.
	objFactory := informers.NewSharedInformerFactory(k.cfg.Client, 0)
	for kind, inf := range map[string]cache.SharedIndexInformer{
		"ConfigMap": objFactory.Core().V1().ConfigMaps().Informer(),
		"Secret":    objFactory.Core().V1().Secrets().Informer(),
	} {
		notify := func(obj any) {
			if m, ok := obj.(metav1.Object); ok {
				k.onSourceChanged(kind, m.GetNamespace(), m.GetName())
			}
		}
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    notify,
			UpdateFunc: func(_, obj any) { notify(obj) },
		}); err != nil {
			k.cancel()
			return fmt.Errorf("pkubelet: %s handler: %w", kind, err)
		}
	}

	podFactory.Start(k.ctx.Done())
	objFactory.Start(k.ctx.Done())
	for _, synced := range []map[reflect.Type]bool{podFactory.WaitForCacheSync(k.ctx.Done()), objFactory.WaitForCacheSync(k.ctx.Done())} {
		for typ, ok := range synced {
			if !ok {
				k.cancel()
				return fmt.Errorf("pkubelet: cache for %v did not sync", typ)
			}
		}
	}
	if !k.cfg.DisableBinder {
		if err := k.startBinder(); err != nil {
			k.cancel()
			return err
		}
	}
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		k.heartbeat(k.ctx)
	}()
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		<-k.ctx.Done()
		podFactory.Shutdown()
		objFactory.Shutdown()
	}()
	return nil
}

// Stop terminates every process (SIGTERM, then SIGKILL after a short grace)
// and waits for them and for the kubelet's goroutines. It does not touch the
// API, which may already be gone.
func (k *Kubelet) Stop() {
	k.stopOnce.Do(func() {
		if k.cancel == nil {
			return
		}
		k.cancel()
		k.wg.Wait()
	})
}

// PodDir is the host directory of a Pod incarnation: its cwd, its
// non-PVC volumes under volumes/, and its <container>.log files.
func (k *Kubelet) PodDir(pod *corev1.Pod) string {
	return filepath.Join(k.cfg.RootDir, "pods", fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID))
}

// LogPath is where the stdout and stderr of a container go, across restarts.
func (k *Kubelet) LogPath(pod *corev1.Pod, container string) string {
	return filepath.Join(k.PodDir(pod), container+".log")
}

func (k *Kubelet) onPod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	k.mu.Lock()
	if k.finished[pod.UID] || k.ctx.Err() != nil {
		k.mu.Unlock()
		return
	}
	w := k.workers[pod.UID]
	if w == nil {
		// A new UID under a known name means the old incarnation is gone
		// from the API, even if its delete event has not arrived yet.
		for _, old := range k.workers {
			if old.namespace == pod.Namespace && old.name == pod.Name {
				old.vanish()
			}
		}
		w = newPodWorker(k, pod)
		k.workers[pod.UID] = w
		k.wg.Add(1)
		go func() {
			defer k.wg.Done()
			w.run()
			k.mu.Lock()
			delete(k.workers, w.uid)
			k.finished[w.uid] = true
			k.mu.Unlock()
		}()
	}
	k.mu.Unlock()
	w.update(pod)
}

func (k *Kubelet) onPodDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	k.mu.Lock()
	w := k.workers[pod.UID]
	k.mu.Unlock()
	if w != nil {
		w.vanish()
	}
}

// onSourceChanged asks every Pod that projects the object to refresh.
func (k *Kubelet) onSourceChanged(kind, namespace, name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, w := range k.workers {
		if w.namespace == namespace && w.projects(kind, name) {
			w.requestRefresh()
		}
	}
}

// setHostEntry records (or, with nil names, removes) a Pod's hosts line and
// rewrites the hosts file.
func (k *Kubelet) setHostEntry(uid types.UID, ip string, names []string) {
	if k.cfg.HostsFile == "" {
		return
	}
	k.mu.Lock()
	if names == nil {
		delete(k.hosts, uid)
	} else {
		k.hosts[uid] = hostEntry{ip: ip, names: names}
	}
	k.mu.Unlock()
	if err := k.writeHosts(); err != nil {
		k.log.Error("write hosts file", "err", err)
	}
}

func (k *Kubelet) writeHosts() error {
	if k.cfg.HostsFile == "" {
		return nil
	}
	k.hostsMu.Lock()
	defer k.hostsMu.Unlock()
	k.mu.Lock()
	entries := make([]hostEntry, 0, len(k.hosts))
	for _, e := range k.hosts {
		entries = append(entries, e)
	}
	k.mu.Unlock()
	if err := writeInPlace(k.cfg.HostsFile, renderHosts(entries)); err != nil {
		return fmt.Errorf("pkubelet: %w", err)
	}
	return nil
}
