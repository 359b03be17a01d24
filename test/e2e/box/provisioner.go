package box

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

const (
	// StorageClass is the cluster's default class: claims get a directory
	// of the work directory as a hostPath volume, made when they appear and
	// removed when they go.
	StorageClass    = "e2e-hostpath"
	provisionerName = "e2e.kube-namesrv.io/hostpath"
	provisionedBy   = "pv.kubernetes.io/provisioned-by"
)

// provisioner is the box's volume provisioner: the part of an external
// provisioner the suite needs. It binds each pending claim of its class to
// a new volume made for it (a pre-bound PersistentVolume, which the
// persistentvolume-binder controller completes), and deletes the volumes it
// made once released.
type provisioner struct {
	cs     kubernetes.Interface
	dir    string
	log    *slog.Logger
	logf   *os.File
	cancel context.CancelFunc
	done   chan struct{}
}

func startProvisioner(cs kubernetes.Interface, dir, logDir string) (*provisioner, error) {
	logf, err := os.OpenFile(filepath.Join(logDir, "provisioner.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("box: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &provisioner{cs: cs, dir: dir, log: slog.New(slog.NewTextHandler(logf, nil)), logf: logf, cancel: cancel, done: make(chan struct{})}
	go p.loop(ctx)
	return p, nil
}

// ready creates the default StorageClass.
func (p *provisioner) ready(ctx context.Context) error {
	sc := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: StorageClass, Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
		Provisioner:       provisionerName,
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate),
	}
	if _, err := p.cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("box: StorageClass: %w", err)
	}
	return nil
}

func (p *provisioner) stop() {
	p.cancel()
	<-p.done
	p.logf.Close()
}

// loop reconciles every half second until stopped.
func (p *provisioner) loop(ctx context.Context) {
	defer close(p.done)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := p.sync(ctx); err != nil && ctx.Err() == nil {
			p.log.Error("sync", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (p *provisioner) sync(ctx context.Context) error {
	claims, err := p.cs.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var errs []error
	for i := range claims.Items {
		c := &claims.Items[i]
		if c.Spec.VolumeName == "" && c.DeletionTimestamp == nil && ptr.Deref(c.Spec.StorageClassName, "") == StorageClass {
			errs = append(errs, p.provision(ctx, c))
		}
	}
	vols, err := p.cs.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for i := range vols.Items {
		v := &vols.Items[i]
		if v.Annotations[provisionedBy] == provisionerName && v.Status.Phase == corev1.VolumeReleased && v.DeletionTimestamp == nil {
			errs = append(errs, p.delete(ctx, v))
		}
	}
	return errors.Join(errs...)
}

func (p *provisioner) provision(ctx context.Context, c *corev1.PersistentVolumeClaim) error {
	name := "pvc-" + string(c.UID)
	dir := filepath.Join(p.dir, c.Namespace+"_"+c.Name+"_"+string(c.UID))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// Pods run as any user, and a hostPath volume's owner is not changed
	// for their fsGroup.
	if err := os.Chmod(dir, 0o777); err != nil {
		return err
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{provisionedBy: provisionerName}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: c.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes:                   c.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              StorageClass,
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: c.Namespace, Name: c.Name, UID: c.UID},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: ptr.To(corev1.HostPathDirectory)}},
		},
	}
	if _, err := p.cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return fmt.Errorf("volume for %s/%s: %w", c.Namespace, c.Name, err)
	}
	p.log.Info("provisioned", "claim", c.Namespace+"/"+c.Name, "volume", name, "dir", dir)
	return nil
}

func (p *provisioner) delete(ctx context.Context, v *corev1.PersistentVolume) error {
	if v.Spec.HostPath != nil {
		if err := os.RemoveAll(v.Spec.HostPath.Path); err != nil {
			return err
		}
	}
	if err := p.cs.CoreV1().PersistentVolumes().Delete(ctx, v.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting volume %s: %w", v.Name, err)
	}
	p.log.Info("deleted", "volume", v.Name)
	return nil
}
