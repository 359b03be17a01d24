package box

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Container is a container the node's runtime runs or ran, as the kubelet
// labelled it: also for pods already gone from the API.
type Container struct {
	// ID is the runtime's; a pod status names it containerd://<ID>.
	ID string
	// Name is the container's name in its pod.
	Name                          string
	PodNamespace, PodName, PodUID string
	Running                       bool
	// PID is the main process's in the box's PID namespace (the test
	// process's), 0 when not running.
	PID int
}

// Containers lists every container of the runtime, through its CRI API
// (what the kubelet uses), sandboxes left out.
func (b *Box) Containers(ctx context.Context) ([]Container, error) {
	conn, err := grpc.NewClient("unix://"+b.containerdSock(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("box: CRI: %w", err)
	}
	defer conn.Close()
	rt := cri.NewRuntimeServiceClient(conn)
	l, err := rt.ListContainers(ctx, &cri.ListContainersRequest{})
	if err != nil {
		return nil, fmt.Errorf("box: CRI: listing containers: %w", err)
	}
	var out []Container
	for _, c := range l.Containers {
		ct := Container{ID: c.Id, Name: c.Labels["io.kubernetes.container.name"],
			PodNamespace: c.Labels["io.kubernetes.pod.namespace"], PodName: c.Labels["io.kubernetes.pod.name"],
			PodUID: c.Labels["io.kubernetes.pod.uid"], Running: c.State == cri.ContainerState_CONTAINER_RUNNING}
		if ct.Running {
			st, err := rt.ContainerStatus(ctx, &cri.ContainerStatusRequest{ContainerId: c.Id, Verbose: true})
			if err != nil {
				return nil, fmt.Errorf("box: CRI: status of %s: %w", c.Id, err)
			}
			var info struct {
				PID int `json:"pid"`
			}
			if err := json.Unmarshal([]byte(st.Info["info"]), &info); err != nil {
				return nil, fmt.Errorf("box: CRI: status of %s: %w", c.Id, err)
			}
			ct.PID = info.PID
		}
		out = append(out, ct)
	}
	return out, nil
}

// VolumeDir is where a pod's volume lives on the node: an emptyDir's
// directory under the kubelet's, or the directory of the provisioner's
// volume bound to a persistentVolumeClaim.
func (b *Box) VolumeDir(ctx context.Context, pod *corev1.Pod, volume string) (string, error) {
	for _, v := range pod.Spec.Volumes {
		if v.Name != volume {
			continue
		}
		switch {
		case v.EmptyDir != nil:
			return filepath.Join("/var/lib/kubelet/pods", string(pod.UID), "volumes", "kubernetes.io~empty-dir", volume), nil
		case v.PersistentVolumeClaim != nil:
			pvc, err := b.Clientset.CoreV1().PersistentVolumeClaims(pod.Namespace).Get(ctx, v.PersistentVolumeClaim.ClaimName, metav1.GetOptions{})
			if err != nil {
				return "", fmt.Errorf("box: %w", err)
			}
			pv, err := b.Clientset.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
			if err != nil {
				return "", fmt.Errorf("box: volume of claim %s/%s: %w", pod.Namespace, pvc.Name, err)
			}
			if pv.Spec.HostPath == nil {
				return "", fmt.Errorf("box: volume %s is not the provisioner's", pv.Name)
			}
			return pv.Spec.HostPath.Path, nil
		default:
			return "", fmt.Errorf("box: volume %s of %s/%s is neither an emptyDir nor a claim", volume, pod.Namespace, pod.Name)
		}
	}
	return "", fmt.Errorf("box: %s/%s has no volume %s", pod.Namespace, pod.Name, volume)
}
