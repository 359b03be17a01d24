package nsadmin

import "github.com/spf13/pflag"

// kvNamespace is the long form of mqadmin's -s/--namespace, the KV
// namespace: --kv-namespace where the frontend has a --namespace of its own
// (kubectl's, in kubectl nsc).
func kvNamespace(fs *pflag.FlagSet) string {
	if fs.Lookup("namespace") != nil {
		return "kv-namespace"
	}
	return "namespace"
}

func kvNamespaceFlag(fs *pflag.FlagSet, dst *string) {
	fs.StringVarP(dst, kvNamespace(fs), "s", "", "the KV namespace (required)")
}

// commands are the subcommands, in help order: mqadmin's NameServer side,
// then what only nsadmin has.
var commands = []*command{
	{
		name: "clusterList", summary: "List cluster infos: every live broker address, by cluster.",
		notes: `Prints mqadmin's first columns (#Cluster Name, #Broker Name, #BID, #Addr).
#Version, #InTPS, #OutTPS, #Timer, #PCWait, #Hour, #SPACE and #ACTIVATED are
broker runtime stats that only brokers know; they are left out, and so are
-m and -i, which only show such stats. A row is keyed by cluster, broker
name and id: a broker registered with another address on some peers shows
as one row per address, "differs on" the others.`,
		new: func(fs *pflag.FlagSet) runner {
			c := &clusterList{}
			fs.StringVarP(&c.cluster, "clusterName", "c", "", "only this cluster")
			fs.BoolVarP(&c.more, "moreStats", "m", false, "(mqadmin's broker stats; refused)")
			fs.StringVarP(&c.interval, "interval", "i", "", "(mqadmin's broker stats; refused)")
			return c
		},
	},
	{
		name: "topicList", summary: "Fetch all topic list from name server.",
		notes: `-c prints mqadmin's #Cluster Name and #Topic columns, found with
GET_TOPICS_BY_CLUSTER, without retry and dead-letter topics as mqadmin does;
#Consumer Group is left out: consumer groups are known to brokers only.
Names are printed whole, where mqadmin cuts them at 20 and 64 characters.`,
		new: func(fs *pflag.FlagSet) runner {
			c := &topicList{}
			fs.BoolVarP(&c.clusterModel, "clusterModel", "c", false, "print each topic's cluster")
			return c
		},
	},
	{
		name: "topicRoute", summary: "Examine topic route info.", synopsis: "-t TOPIC",
		notes: `Prints mqadmin topicRoute -l's table, every column of it; -l is
accepted and changes nothing. mqadmin prints the route as JSON by default:
-o json prints each peer's route with the same field names.`,
		new: func(fs *pflag.FlagSet) runner {
			c := &topicRoute{}
			fs.StringVarP(&c.topic, "topic", "t", "", "topic name (required)")
			fs.BoolVarP(&c.list, "list", "l", false, "table output (the default)")
			return c
		},
	},
	{
		name: "topicClusterList", summary: "Get cluster info for topic.", synopsis: "-t TOPIC",
		notes: `Lists the cluster of every broker in the topic's route (mqadmin looks at
the first broker only).`,
		new: func(fs *pflag.FlagSet) runner {
			c := &topicClusterList{}
			fs.StringVarP(&c.topic, "topic", "t", "", "topic name (required)")
			return c
		},
	},
	{
		name: "getNamesrvConfig", summary: "Get configs of name server.",
		notes: `Prints mqadmin's block per peer, keys sorted, then the properties the
peers disagree on.`,
		new: func(*pflag.FlagSet) runner { return getNamesrvConfig{} },
	},
	{
		name: "updateNamesrvConfig", summary: "Update configs of name server, on every peer.", synopsis: "-k KEY -v VALUE",
		new: func(fs *pflag.FlagSet) runner {
			c := &updateNamesrvConfig{}
			fs.StringVarP(&c.key, "key", "k", "", "config key (required)")
			fs.StringVarP(&c.value, "value", "v", "", "config value")
			return c
		},
	},
	{
		name: "updateKvConfig", summary: "Create or update KV config, on every peer.", synopsis: "-s NAMESPACE -k KEY -v VALUE",
		new: func(fs *pflag.FlagSet) runner {
			c := &updateKvConfig{}
			kvNamespaceFlag(fs, &c.namespace)
			fs.StringVarP(&c.key, "key", "k", "", "the key name (required)")
			fs.StringVarP(&c.value, "value", "v", "", "the key value")
			return c
		},
	},
	{
		name: "deleteKvConfig", summary: "Delete KV config, on every peer.", synopsis: "-s NAMESPACE -k KEY",
		new: func(fs *pflag.FlagSet) runner {
			c := &deleteKvConfig{}
			kvNamespaceFlag(fs, &c.namespace)
			fs.StringVarP(&c.key, "key", "k", "", "the key name (required)")
			return c
		},
	},
	{
		name: "kvList", summary: "List the KV config of a namespace (GET_KVLIST_BY_NAMESPACE).", synopsis: "-s NAMESPACE",
		notes: `mqadmin has no such command. A peer without the namespace counts as holding
no keys in it.`,
		new: func(fs *pflag.FlagSet) runner {
			c := &kvList{}
			kvNamespaceFlag(fs, &c.namespace)
			return c
		},
	},
	{
		name: "wipeWritePerm", summary: "Wipe write perm of broker in every name server.", synopsis: "-b BROKER",
		new: func(fs *pflag.FlagSet) runner {
			c := &writePerm{}
			fs.StringVarP(&c.brokerName, "brokerName", "b", "", "broker name (required)")
			return c
		},
	},
	{
		name: "addWritePerm", summary: "Add write perm of broker in every name server.", synopsis: "-b BROKER",
		new: func(fs *pflag.FlagSet) runner {
			c := &writePerm{add: true}
			fs.StringVarP(&c.brokerName, "brokerName", "b", "", "broker name (required)")
			return c
		},
	},
	{
		name: "deleteTopic", summary: "Delete topic from every NameServer (the NameServer half of mqadmin's).", synopsis: "-t TOPIC -c CLUSTER",
		notes: `Sends DELETE_TOPIC_IN_NAMESRV to every peer. ` + deleteTopicNote + `.`,
		new: func(fs *pflag.FlagSet) runner {
			c := &deleteTopic{}
			fs.StringVarP(&c.topic, "topic", "t", "", "topic name (required)")
			fs.StringVarP(&c.cluster, "clusterName", "c", "", "delete topic from which cluster (required)")
			return c
		},
	},
	{
		name: "peerStatus", summary: "Each peer's route summary from its HTTP port: start-up gate, counts, digest, DataVersions, KV.",
		notes: `Reads GET /routes/summary on each peer's HTTP port (namesrv --http-port),
which tells what the remoting protocol cannot: when the process started, the
state of its start-up route gate, the digest of its live brokers with their
DataVersions (equal digests: the same brokers at the same versions), and the
declared KV's state. Brokers whose registration or DataVersion differs
between peers are listed. A NameServer whose HTTP port needs a credential
for reads (httpAuthScope=all) takes a bearer token (--http-token-file) or,
over HTTPS (--https), a client certificate holding the read role (--tls-cert,
--tls-key).`,
		new: func(fs *pflag.FlagSet) runner {
			c := &peerStatus{fs: fs}
			fs.IntVar(&c.httpPort, "http-port", 8080, "the NameServers' HTTP port")
			fs.BoolVar(&c.https, "https", false, "read the HTTP port over TLS (namesrv httpTLSMode permissive or enforcing), with the --tls-* flags' CA and client certificate")
			fs.StringVar(&c.tokenFile, "http-token-file", "", "file whose first line is the bearer token to present (namesrv httpAuthTokenFile)")
			return c
		},
	},
	{
		name: "diff", summary: "Compare whole tables across the peers; exit 1 on any difference.",
		notes: `Compares the live brokers (by cluster, broker name and id, with their
address), the topic lists, and the queue data of every topic among the peers
that hold it; with -s, the KV entries of those namespaces (the protocol
cannot list namespaces); with --config, every property. A peer that fails is
left out of the comparison and makes the exit code 3.`,
		new: func(fs *pflag.FlagSet) runner {
			c := &diff{}
			fs.StringSliceVarP(&c.namespaces, kvNamespace(fs), "s", nil, "also compare this KV namespace (repeat, or comma-separate)")
			fs.BoolVar(&c.config, "config", false, "also compare the NameServers' configuration")
			return c
		},
	},
}
