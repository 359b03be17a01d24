package cluster

import (
	"errors"
	"os"
)

// Box describes the private network namespace set up by hack/e2e-box.sh.
type Box struct {
	// IPPrefix is routed to lo inside the box (e.g. "10.244.0."); Pods
	// bind and report <IPPrefix>N.
	IPPrefix string
	// AdvertiseAddress is kube-apiserver's --advertise-address; the box has
	// no default route, without which the API server does not start.
	AdvertiseAddress string
	// HostsFile is bind-mounted over /etc/hosts and receives the per-pod
	// DNS names.
	HostsFile string
}

// Environment variables exported by hack/e2e-box.sh.
const (
	envHostsFile        = "CIB_HOSTS_FILE"
	envIPPrefix         = "CIB_IP_PREFIX"
	envAdvertiseAddress = "CIB_ADVERTISE_ADDRESS"
)

// ErrNotInBox is returned by BoxFromEnv outside hack/e2e-box.sh.
var ErrNotInBox = errors.New("cluster: not running inside hack/e2e-box.sh (CIB_* variables unset); run `make test-e2e`")

// BoxFromEnv reads the box set up by hack/e2e-box.sh.
func BoxFromEnv() (*Box, error) {
	b := &Box{
		IPPrefix:         os.Getenv(envIPPrefix),
		AdvertiseAddress: os.Getenv(envAdvertiseAddress),
		HostsFile:        os.Getenv(envHostsFile),
	}
	if b.IPPrefix == "" || b.AdvertiseAddress == "" || b.HostsFile == "" {
		return nil, ErrNotInBox
	}
	return b, nil
}
