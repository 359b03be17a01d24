package pkubelet

import "testing"

func TestMountTableRewrite(t *testing.T) {
	table := newMountTable([]mount{
		{path: "/etc/app", hostPath: "/h/cm"},
		{path: "/etc/app/certs/", hostPath: "/h/secret"},
		{path: "/data", hostPath: "/h/pvc/data"},
		{path: "/", hostPath: "/h/root"}, // dropped: would rewrite everything
		{path: "relative", hostPath: "/h/rel"},
	})
	for _, tc := range []struct{ in, want string }{
		{"/etc/app", "/h/cm"},
		{"/etc/app/app.conf", "/h/cm/app.conf"},
		{"/etc/app/certs/tls.crt", "/h/secret/tls.crt"}, // longest mount wins
		{"/etc/app/certs", "/h/secret"},
		{"--config=/etc/app/app.conf", "--config=/h/cm/app.conf"},
		{"-c /etc/app/a,/data/b", "-c /h/cm/a,/h/pvc/data/b"},
		{"/database", "/database"},
		{"/srv/data", "/srv/data"},
		{"/etc/application", "/etc/application"},
		{"/data.bak", "/data.bak"},
		{"file:/data", "file:/h/pvc/data"},
		{"no paths here", "no paths here"},
		{"relative/x", "relative/x"},
		{"/bin/sh", "/bin/sh"},
	} {
		if got := table.rewrite(tc.in); got != tc.want {
			t.Errorf("rewrite(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestMountTableRewriteDoesNotRewriteHostPaths(t *testing.T) {
	// An emptyDir at /tmp and a kubelet root below /tmp: the host path
	// inserted for /tmp must not be rewritten again.
	table := newMountTable([]mount{{path: "/tmp", hostPath: "/tmp/root/pods/p/volumes/tmp"}})
	if got, want := table.rewrite("/tmp/x"), "/tmp/root/pods/p/volumes/tmp/x"; got != want {
		t.Errorf("rewrite = %q, want %q", got, want)
	}
}

func TestMountEnvName(t *testing.T) {
	for in, want := range map[string]string{
		"/etc/namesrv":      "PKUBELET_MOUNT_ETC_NAMESRV",
		"/data/":            "PKUBELET_MOUNT_DATA",
		"/home/rocketmq/kv": "PKUBELET_MOUNT_HOME_ROCKETMQ_KV",
		"/var/run/my-app.d": "PKUBELET_MOUNT_VAR_RUN_MY_APP_D",
		"/a//b":             "PKUBELET_MOUNT_A_B",
	} {
		if got := mountEnvName(in); got != want {
			t.Errorf("mountEnvName(%q) = %q, want %q", in, got, want)
		}
	}
}
