package controllers

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

var _ = Describe("config/default", func() {
	It("renders with kustomize into objects the API server accepts", func() {
		kubectl := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")
		Expect(kubectl).To(BeAnExistingFile(), "hack/envtest-binaries.sh builds kubectl next to kube-apiserver")
		out, err := exec.Command(kubectl, "kustomize", filepath.Join("..", "config", "default")).Output()
		Expect(err).NotTo(HaveOccurred())

		kinds := map[string]int{}
		for _, doc := range strings.Split(string(out), "\n---\n") {
			u := &unstructured.Unstructured{}
			Expect(yaml.Unmarshal([]byte(doc), &u.Object)).To(Succeed())
			kinds[u.GetKind()]++
			if u.GetKind() == "Namespace" {
				// A dry-run namespace would not hold the dry-run objects in it.
				Expect(client.IgnoreAlreadyExists(k8sClient.Create(testCtx, u))).To(Succeed())
				continue
			}
			Expect(k8sClient.Apply(testCtx, client.ApplyConfigurationFromUnstructured(u),
				client.DryRunAll, client.FieldOwner("config-default-test"), client.ForceOwnership)).
				To(Succeed(), "%s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
			if u.GetKind() == "Deployment" {
				Expect(u.GetNamespace()).To(Equal("kube-namesrv-system"))
				image, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
				Expect(image).To(HaveLen(1))
				Expect(image[0]).To(HaveKeyWithValue("image", "kube-namesrv/kube-namesrv:v0.1.0"))
			}
		}
		Expect(kinds).To(Equal(map[string]int{
			"Namespace": 1, "CustomResourceDefinition": 1, "ServiceAccount": 1, "Role": 1, "RoleBinding": 1,
			"ClusterRole": 3, "ClusterRoleBinding": 1, "Deployment": 1,
		}))
	})
})
