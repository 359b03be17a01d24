# kube-namesrv: a Kubernetes-native Apache RocketMQ NameServer and its operator.
#
# Everything this Makefile needs is built from the Go module proxy into bin/
# (git-ignored); the control-plane binaries for envtest live in setup-envtest's
# own store outside the clone so that later clones and CI reuse them.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

VERSION ?= v0.1.0
# The image `make deploy` and `make run-manager` use: the operator's, which is
# also the NameServer pods' (one image holds both programs).
IMG ?= kube-namesrv/kube-namesrv:$(VERSION)

LOCALBIN ?= $(shell pwd)/bin
GO ?= go
# Build and test with the patched Go release go.mod names (its toolchain
# line), fetched from the Go module proxy when the machine has an older one:
# govulncheck holds the code to the standard library's security fixes.
GOTOOLCHAIN := $(shell awk '$$1 == "toolchain" {print $$2}' go.mod)
export GOTOOLCHAIN
MODULE := $(shell awk '$$1 == "module" {print $$2}' go.mod)
# The cluster of the current kubeconfig context, for install, deploy and
# run-manager. kubectl comes from PATH; `hack/envtest-binaries.sh` prints a
# directory holding one built from source.
KUBECTL ?= kubectl

CONTROLLER_TOOLS_VERSION ?= v0.23.0
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen

HELM_VERSION ?= v3.22.0
HELM ?= $(LOCALBIN)/helm
CHART ?= charts/kube-namesrv

# promtool and bin/promql (hack/promql, the PromQL parser as a command) come
# from one Prometheus release: hack/promql/go.mod pins it.
PROMETHEUS_VERSION ?= $(shell awk '{for(i=1;i<NF;i++) if($$i=="github.com/prometheus/prometheus"){print $$(i+1); exit}}' hack/promql/go.mod)
PROMTOOL ?= $(LOCALBIN)/promtool
PROMQL ?= $(LOCALBIN)/promql
# The alert rules; the chart carries a copy in files/ (make chart-rules).
RULES ?= config/prometheus/namesrv-rules.yaml
# Where `make image-binaries` puts the container image's binaries.
IMAGE_BIN_DIR ?= $(LOCALBIN)/image

# Outside the clone so CI on the same machine reuses it; override for hermetic runs.
ENVTEST_STORE ?= $(or $(XDG_DATA_HOME),$(HOME)/.local/share)/kubebuilder-envtest
export ENVTEST_STORE

# Short fuzzing inside `make test`; `make fuzz` runs each target longer.
# `make test` bounds fuzzing by a count of executions, not a duration: with a
# duration, Go 1.26's fuzz coordinator can fail a target with "context
# deadline exceeded" at the deadline having found nothing (go.dev/issue/75804,
# fixed in Go 1.27). A count has no deadline; 30000 runs take 1-10 s a target.
FUZZTIME_SHORT ?= 30000x
FUZZTIME ?= 60s

##@ General

.PHONY: all
all: build ## Build every command (the default target).

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z0-9_-]+:.*?##/ { printf "  %-18s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: fmt
fmt: ## Format the Go code of every module.
	gofmt -l -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## Run go vet.
	$(GO) vet ./...

# golangci-lint with .golangci.yml in every module: the product, and the
# modules beside it (TOOL_MODULES).
.PHONY: lint
lint: golangci-lint ## Run golangci-lint (.golangci.yml) on every module: the product, tools and test/e2e.
	@for m in . $(TOOL_MODULES); do echo "lint $$m"; \
	  (cd $$m && $(GOLANGCI_LINT) run --config $(CURDIR)/.golangci.yml ./...) || exit 1; done

.PHONY: check-fmt
check-fmt: ## Fail when a Go file is not gofmt-clean.
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# Code and docs cite docs/protocol.md#<anchor>, other *.md files, testdata/
# paths; tools/refcheck fails on any that does not resolve (test-tools, and
# so test-unit and test, run it too).
.PHONY: check-refs
check-refs: ## Fail on a reference to a file, or a docs anchor, that is not in the repository.
	$(GO) test -C tools -count=1 ./refcheck

.PHONY: check-help
check-help: ## Fail when make help prints a variable reference that make did not expand.
	@out=$$($(MAKE) --no-print-directory -s help | grep -nE '\$$[({]' || true); \
	  if [ -n "$$out" ]; then echo "make help prints unexpanded variables (awk reads the Makefile, not make):"; echo "$$out"; exit 1; fi

.PHONY: check-makefile
check-makefile: ## Fail when a target has no description, so that `make help` lists every target.
	@missing=$$(awk '/^\.PHONY:/ {for (i = 2; i <= NF; i++) phony[$$i] = 1} \
	  /^[a-zA-Z0-9_-]+:.*##/ {sub(/:.*/, ""); described[$$0] = 1} \
	  END {for (t in phony) if (!(t in described)) print t}' $(MAKEFILE_LIST)); \
	  if [ -n "$$missing" ]; then echo "targets without a ## description (make help leaves them out):"; echo "$$missing"; exit 1; fi

##@ Build

# Every product binary is built by hack/build-binaries.sh, which holds the link flags
# (static, stripped, VERSION stamped): the Dockerfile runs it too, so CI
# compiles exactly what the image ships.
.PHONY: build
build: ## Build every command (namesrv, manager, nsadmin, kubectl-nsc) into bin/.
	VERSION=$(VERSION) hack/build-binaries.sh $(LOCALBIN) ./cmd/...

# The benchmark driver is tooling, in the tools module (tools/go.mod), not
# part of the product or its image.
.PHONY: nsbench
nsbench: | $(LOCALBIN) ## Build bin/nsbench, the load generator, from the tools module.
	CGO_ENABLED=0 $(GO) build -C tools -trimpath -o $(LOCALBIN)/nsbench ./nsbench

.PHONY: image-binaries
image-binaries: ## Build the image's binaries (static) into IMAGE_BIN_DIR, as the Dockerfile does.
	VERSION=$(VERSION) hack/build-binaries.sh $(IMAGE_BIN_DIR)

.PHONY: run
run: ## Run a NameServer on :9876 with defaults.
	$(GO) run ./cmd/namesrv

# The manager outside the cluster, against the current kubeconfig context's
# cluster (the CRD installed first: make install). The NameServer pods it
# creates run IMG, which that cluster must be able to pull. Its metrics
# endpoint is off, so that it does not take the NameServer's HTTP port.
MANAGER_ARGS ?= --metrics-bind-address=0
.PHONY: run-manager
run-manager: ## Run the operator's manager locally against the current kubeconfig (after make install); NameServer pods run IMG.
	$(GO) run ./cmd/manager --namesrv-image=$(IMG) $(MANAGER_ARGS)

##@ Deployment (the current kubeconfig context's cluster)

# CRDs are applied server-side: the NameServerCluster CRD is larger than the
# annotation client-side apply keeps, and a Helm install's fields are taken over.
.PHONY: install
install: ## Install the CRDs (config/crd) into the cluster.
	$(KUBECTL) apply --server-side --force-conflicts -k config/crd

# Deleting the CRD deletes every NameServerCluster with it; they carry no
# finalizer, so nothing waits for the operator.
ignore-not-found ?= false
.PHONY: uninstall
uninstall: ## Delete the CRDs, and with them every NameServerCluster (ignore-not-found=true to not fail when absent).
	$(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -k config/crd

# config/default with the manager's image set to IMG and told to deploy IMG
# as the NameServer image too, through an overlay in a temporary directory
# under bin/ (kustomize takes no absolute paths), so that nothing in config/
# changes.
.PHONY: deploy
deploy: ## Deploy the operator (CRD, RBAC, manager) from config/default, running IMG=<repository>:<tag>.
	@tag="$(IMG)"; tag="$${tag##*:}"; repo="$(IMG)"; repo="$${repo%:*}"; \
	  case "$(IMG)" in *:*) ;; *) tag=/;; esac; \
	  case "$$tag" in */*) echo "IMG must be <repository>:<tag>, not $(IMG)"; exit 1;; esac; \
	  mkdir -p bin && dir=$$(mktemp -d bin/deploy.XXXXXX) && trap 'rm -rf "$$dir"' EXIT && \
	  printf '%s\n' "resources:" "- ../../config/default" \
	    "images:" "- name: kube-namesrv/kube-namesrv" "  newName: $$repo" "  newTag: \"$$tag\"" \
	    "patches:" "- target: {kind: Deployment, name: kube-namesrv-controller-manager}" \
	    "  patch: '[{\"op\": \"add\", \"path\": \"/spec/template/spec/containers/0/args/-\", \"value\": \"--namesrv-image=$(IMG)\"}]'" \
	    > "$$dir/kustomization.yaml" && \
	  $(KUBECTL) apply --server-side --force-conflicts -k "$$dir"

.PHONY: undeploy
undeploy: ## Delete what deploy created, CRD included (ignore-not-found=true to not fail when absent).
	$(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -k config/default

##@ Operator code generation

# CRD, RBAC and deepcopy are generated from the markers in api/ and
# controllers/ and committed; verify-generated keeps the committed copies honest.
.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate the CRD and the manager's RBAC role into config/.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd paths="./api/...;./controllers/..." \
	  output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate the DeepCopy methods of the API types.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."

.PHONY: verify-generated
verify-generated: manifests generate ## Fail when the committed generated files are stale.
	@git diff --exit-code -- api config && test -z "$$(git ls-files --others --exclude-standard -- api config)" || \
	  { echo "generated files are stale or uncommitted: run 'make manifests generate' and commit the result"; git status --short -- api config; exit 1; }

# Helm installs crds/ but never upgrades it, so the chart ships a verbatim
# copy of the generated CRD and docs/operator.md says how to upgrade it.
.PHONY: chart-crds
chart-crds: manifests ## Copy the generated CRDs into the Helm chart.
	rm -f $(CHART)/crds/*.yaml
	mkdir -p $(CHART)/crds
	cp config/crd/bases/*.yaml $(CHART)/crds/

.PHONY: verify-chart-crds
verify-chart-crds: chart-crds ## Fail when the chart's CRDs differ from the generated ones.
	@git diff --exit-code -- $(CHART)/crds && test -z "$$(git ls-files --others --exclude-standard -- $(CHART)/crds)" || \
	  { echo "$(CHART)/crds is stale or uncommitted: run 'make chart-crds' and commit the result"; git status --short -- $(CHART)/crds; exit 1; }

# The chart's PrometheusRule is made from a copy of the rules file, which
# Helm can only read inside the chart.
.PHONY: chart-rules
chart-rules: ## Copy the alert rules into the Helm chart.
	mkdir -p $(CHART)/files/prometheus
	cp $(RULES) $(CHART)/files/prometheus/

.PHONY: verify-chart-rules
verify-chart-rules: chart-rules ## Fail when the chart's alert rules differ from config/prometheus.
	@git diff --exit-code -- $(CHART)/files/prometheus && test -z "$$(git ls-files --others --exclude-standard -- $(CHART)/files/prometheus)" || \
	  { echo "$(CHART)/files/prometheus is stale or uncommitted: run 'make chart-rules' and commit the result"; git status --short -- $(CHART)/files/prometheus; exit 1; }

# docs/api-reference.md is generated from the Go types of api/ by
# crd-ref-docs (hack/crd-ref-docs.yaml configures it); verify-api-docs keeps
# the committed copy honest, as verify-generated does the CRD.
API_DOCS ?= docs/api-reference.md

.PHONY: api-docs
api-docs: crd-ref-docs ## Generate docs/api-reference.md, the NameServerCluster API reference, from api/.
	@out=$$(mktemp -d) && trap 'rm -rf "$$out"' EXIT && \
	  $(CRD_REF_DOCS) --source-path ./api --config hack/crd-ref-docs.yaml --renderer markdown --log-level ERROR --output-path "$$out/reference.txt" && \
	  { echo "<!-- Generated by make api-docs from the Go types of api/; do not edit. -->"; echo; cat "$$out/reference.txt"; } > $(API_DOCS)

.PHONY: verify-api-docs
verify-api-docs: api-docs ## Fail when docs/api-reference.md differs from the Go types of api/.
	@git diff --exit-code -- $(API_DOCS) && test -z "$$(git ls-files --others --exclude-standard -- $(API_DOCS))" || \
	  { echo "$(API_DOCS) is stale or uncommitted: run 'make api-docs' and commit the result"; git status --short -- $(API_DOCS); exit 1; }

# test/install's API server serves the Prometheus Operator's PodMonitor,
# ServiceMonitor and PrometheusRule, generated from the API types of the
# module hack/monitoring-crds pins (the Prometheus Operator generates its own
# CRDs the same way). Not part of `make test`: the results are committed.
MONITORING_CRDS ?= podmonitors servicemonitors prometheusrules

.PHONY: monitoring-crds
monitoring-crds: $(CONTROLLER_GEN) ## Generate the Prometheus Operator CRDs of test/install/testdata/crds.
	@out=$$(mktemp -d) && trap 'rm -rf "$$out"' EXIT && \
	  (cd hack/monitoring-crds && $(CONTROLLER_GEN) crd paths=github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1 output:crd:dir="$$out") && \
	  for c in $(MONITORING_CRDS); do cp "$$out/monitoring.coreos.com_$$c.yaml" test/install/testdata/crds/; done

##@ Test

# The cheap checks come first, then the tests that need no tool, then the
# ones that wait for tools built from source (minutes to tens of minutes on
# a cold machine: CONTRIBUTING.md, "Test"), so a mistake shows before that
# wait. The end-to-end suite runs beside test-checks: it mostly waits on
# probes, pod starts and broker rounds, and it is made to pass on a busy
# machine.
.PHONY: test
test: check-fmt check-makefile check-help vet lint ## Run every test, end-to-end suite included (the CI command).
	$(MAKE) --no-print-directory -j2 --output-sync=target test-checks test-e2e

.PHONY: test-checks
test-checks: test-fast test-simulation test-tools verify-generated verify-chart-crds verify-chart-rules verify-api-docs test-rules test-slow fuzz-short vulncheck ## Every test of `make test` but the end-to-end suite.

# The packages whose tests need a control plane (envtest), helm, bin/promql
# or the image binaries; they fail, never skip, without them. Every other
# package is in test-fast: a package whose tests start needing one of these
# belongs here.
SLOW_PACKAGES ?= ./controllers ./cmd/kubectl-nsc ./test/install ./test/monitoring
FAST_PACKAGES ?= $(shell $(GO) list ./... | grep -vxF $(foreach p,$(SLOW_PACKAGES),-e $(MODULE)/$(p:./%=%)))

.PHONY: test-fast
test-fast: check-fmt ## gofmt, vet and -race tests of every package that needs no control plane, helm or image (2 minutes once built; FAST_PACKAGES=./namesrv/... for the NameServer alone, 40 s).
	$(GO) vet $(FAST_PACKAGES)
	$(GO) test -race -count=1 $(FAST_PACKAGES)
	$(GO) test -race -count=1 -tags nethttpomithttp2 $(OMIT_HTTP2_PACKAGES)

# The namesrv binary is built without net/http's HTTP/2 server
# (hack/build-binaries.sh); its command and HTTP side are also tested so.
OMIT_HTTP2_PACKAGES ?= ./cmd/namesrv ./namesrv/httpapi ./namesrv/metrics

# Modules of their own beside the product, so that the product's go.mod and
# `go list -deps ./cmd/...` hold none of them: tools/ (nsbench, loadgen, plot,
# refcheck) and test/e2e (the end-to-end suite and its harness). The suite's
# files are vetted here with its build tag and run by test-e2e; the
# harness's own tests run here.
TOOL_MODULES ?= tools test/e2e

.PHONY: test-tools
test-tools: ## vet and -race tests of the modules beside the product (TOOL_MODULES: tools, test/e2e's harness).
	@for m in $(TOOL_MODULES); do \
	  echo "$$m: vet and tests"; \
	  $(GO) vet -C $$m -tags e2e ./... && $(GO) test -C $$m -race -count=1 ./... || exit 1; done

.PHONY: test-slow
test-slow: envtest-assets helm promql image-binaries ## The -race tests of SLOW_PACKAGES: envtest, install and monitoring (builds the tools they need first).
	KUBEBUILDER_ASSETS="$$(hack/envtest-binaries.sh)" HELM=$(HELM) PROMQL=$(PROMQL) IMAGE_BIN_DIR=$(IMAGE_BIN_DIR) \
	  $(GO) test -race -count=1 -timeout 30m $(SLOW_PACKAGES)

# The seeded simulation of the reconcile loop (controllers/sim_test.go): 10,000
# random histories without the race detector, which makes them seven times
# slower (the -race run of ./controllers runs 1,000). -v prints the seed.
.PHONY: test-simulation
test-simulation: ## Run 10,000 random histories of the operator's simulation and print the seed (replay: go test ./controllers -run TestSimulation -seed N).
	$(GO) test -count=1 -v -run '^TestSimulation$$' ./controllers

.PHONY: test-unit
test-unit: test-fast test-simulation test-tools test-slow ## Every package's tests (test-fast, test-simulation, test-tools and test-slow), without fuzzing, vulncheck or the end-to-end suite.

# test/monitoring checks every expression's names against real scrapes; this
# checks the rules themselves.
.PHONY: test-rules
test-rules: promtool ## Check the alert rules and the example Prometheus configuration, and run the rules' unit tests.
	$(PROMTOOL) check rules --lint-fatal $(RULES)
	$(PROMTOOL) check config --lint-fatal config/prometheus/prometheus.yaml
	$(PROMTOOL) test rules config/prometheus/tests/*.yaml
	cd hack/promql && $(GO) test -count=1 ./...

# `make test` runs a short broker churn soak with the other NameServer tests
# (namesrv/soak_test.go); this one runs it for minutes with more brokers.
SOAK_DURATION ?= 3m
SOAK_BROKERS ?= 400
SOAK_FLAGS ?=

.PHONY: test-soak
test-soak: ## Churn hundreds of simulated brokers against a NameServer for SOAK_DURATION (not part of `make test`).
	$(GO) test -race -count=1 -timeout 30m -run '^TestBrokerChurnSoak$$' -v ./namesrv/ \
	  -soak.duration=$(SOAK_DURATION) -soak.brokers=$(SOAK_BROKERS) $(SOAK_FLAGS)

# govulncheck reads its database from a directory built from the
# golang.org/x/vulndb module (the OSV files under data/osv, indexed by that
# module's own indexdb command), so it needs only the Go module proxy, not
# the online database. The data is as new as VULNDB_VERSION: move it to a
# newer pseudo-version of golang.org/x/vulndb to pick up newer reports.
GOVULNCHECK_VERSION ?= v1.9.0
VULNDB_VERSION ?= v0.0.0-20261105234957-e22db6528018
GOVULNCHECK ?= $(LOCALBIN)/govulncheck
INDEXDB ?= $(LOCALBIN)/indexdb
VULNDB ?= $(LOCALBIN)/vulndb/$(VULNDB_VERSION)

.PHONY: vulncheck
vulncheck: $(GOVULNCHECK) $(VULNDB)/index/db.json ## Report known vulnerabilities the code can reach (offline database).
	$(GOVULNCHECK) -db file://$(VULNDB) ./...

$(VULNDB)/index/db.json: | $(INDEXDB)
	@osv="$$(cd / && $(GO) mod download -json golang.org/x/vulndb@$(VULNDB_VERSION) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p')/data/osv"; \
	  test -d "$$osv" || { echo "golang.org/x/vulndb@$(VULNDB_VERSION) has no data/osv"; exit 1; }; \
	  rm -rf $(VULNDB) && echo "indexing $$osv into $(VULNDB)" && $(INDEXDB) -vulns "$$osv" -out $(VULNDB)

# The end-to-end suite runs a one-node cluster inside private mount, network
# and PID namespaces (hack/e2e-box.sh, as root): etcd, kube-apiserver,
# kube-controller-manager and kube-scheduler built like envtest's, a real node
# (containerd, runc and the CNI plugins from Debian, the kubelet, kube-proxy
# and CoreDNS built from the Go module proxy), the operator installed with
# `helm install` of the chart, and the image packed from this build's
# binaries (e2e-images). docs/e2e.md explains it. The test binary is built
# outside the box, where the module proxy is reachable; E2E_PREREQUISITES
# are what the suite needs besides: bin/kubectl-nsc (build), helm, the
# Debian packages and the images.
E2E_PREREQUISITES ?= build helm node-packages node-assets e2e-images
E2E_TIMEOUT ?= 60m
# Scenarios run side by side (most wait on probes and rounds, not CPU); the
# ones that change the node or the operator run alone, first.
E2E_PARALLEL ?= 4
E2E_FLAGS ?=
# The images the node imports: the product image under this build's tag and
# a second one, the release `helm upgrade` moves to; and the pods' sandbox.
E2E_IMAGES_DIR ?= $(LOCALBIN)/images
E2E_IMAGE_REPO := kube-namesrv/kube-namesrv
E2E_NEXT_TAG ?= $(VERSION)-next
E2E_PAUSE_IMAGE := kube-namesrv-e2e/pause:1
# The scenario with production timing (make test-e2e-production), which
# test-e2e leaves out.
E2E_PRODUCTION_TESTS := ^TestProductionTiming
# How the suite is run, in the box: test/e2e's directory, the binaries'
# directories, helm and the images in its environment; then the flags.
E2E_RUN = assets="$$(hack/envtest-binaries.sh)" && node="$$(hack/node-binaries.sh)" && cd test/e2e && \
	KUBEBUILDER_ASSETS="$$assets" E2E_NODE_ASSETS="$$node" HELM=$(HELM) E2E_IMAGES=$(E2E_IMAGES_DIR) \
	E2E_IMAGE_TAG=$(VERSION) E2E_NEXT_TAG=$(E2E_NEXT_TAG) E2E_BIN_DIR=$(LOCALBIN) \
	$(CURDIR)/hack/e2e-box.sh $(LOCALBIN)/e2e.test -test.v -test.timeout $(E2E_TIMEOUT) -test.parallel $(E2E_PARALLEL)

.PHONY: test-e2e
test-e2e: $(E2E_PREREQUISITES) ## Run only the end-to-end suite, on a one-node cluster in a box (root).
	$(GO) test -C test/e2e -c -tags e2e -o $(LOCALBIN)/e2e.test .
	$(E2E_RUN) -test.skip '$(E2E_PRODUCTION_TESTS)' $(E2E_FLAGS)

.PHONY: test-e2e-production
test-e2e-production: $(E2E_PREREQUISITES) ## A config roll with production timing (30 s broker rounds, default probes and drain); not part of `make test`.
	$(GO) test -C test/e2e -c -tags e2e -o $(LOCALBIN)/e2e.test .
	$(E2E_RUN) -test.run '$(E2E_PRODUCTION_TESTS)' $(E2E_FLAGS)

.PHONY: node-packages
node-packages: ## Install the end-to-end node's Debian packages when missing (containerd, runc, CNI plugins, iptables; root).
	hack/node-packages.sh

.PHONY: node-assets
node-assets: ## Build (or find) the end-to-end node's kubelet, kube-scheduler, kube-proxy and CoreDNS.
	@hack/node-binaries.sh >/dev/null

# The product image exactly as the Dockerfile's final stage (mkimage reads
# it and checks the tarball against it), under two tags, and the pause image.
.PHONY: e2e-images
e2e-images: image-binaries | $(LOCALBIN) ## Pack the image from IMAGE_BIN_DIR and the pods' pause image into E2E_IMAGES_DIR (tools/mkimage).
	CGO_ENABLED=0 $(GO) build -C tools -trimpath -o $(LOCALBIN)/mkimage ./mkimage
	CGO_ENABLED=0 $(GO) build -C tools -trimpath -ldflags "-s -w" -o $(LOCALBIN)/pause ./pause
	mkdir -p $(E2E_IMAGES_DIR)
	$(LOCALBIN)/mkimage -o $(E2E_IMAGES_DIR)/kube-namesrv.tar -dockerfile Dockerfile -root /out=$(IMAGE_BIN_DIR) \
	  -tag $(E2E_IMAGE_REPO):$(VERSION) -tag $(E2E_IMAGE_REPO):$(E2E_NEXT_TAG)
	$(LOCALBIN)/mkimage -o $(E2E_IMAGES_DIR)/pause.tar -file /pause=$(LOCALBIN)/pause -entrypoint /pause -user 65535:65535 \
	  -tag $(E2E_PAUSE_IMAGE)

.PHONY: envtest-assets
envtest-assets: ## Build (or find) kube-apiserver, etcd and kubectl for envtest.
	@hack/envtest-binaries.sh >/dev/null

# Each decoder's fuzz target, as package:Target pairs.
FUZZ_TARGETS ?= \
	./namesrv/remoting:FuzzConnStream ./namesrv/remoting:FuzzDecode \
	./namesrv/remoting:FuzzBinaryHeader ./namesrv/remoting:FuzzJSONHeader \
	./namesrv/remoting:FuzzFrameReader \
	./namesrv/fjson:FuzzReader \
	./namesrv/body:FuzzDecodeRegisterBody ./namesrv/body:FuzzDecodeCompressed ./namesrv/body:FuzzScanTopicConfig ./namesrv/body:FuzzInflate \
	./namesrv/body:FuzzDecodeAnswers ./namesrv/body:FuzzRouteRoundTrip ./namesrv/body:FuzzClusterInfoRoundTrip ./namesrv/body:FuzzTopicListRoundTrip \
	./namesrv/config:FuzzParseProperties ./namesrv/config:FuzzFormatProperties ./namesrv/kvconfig:FuzzLoadKV \
	./namesrv/kvdeclared:FuzzDecodeKVFile ./namesrv/httpapi:FuzzDecodeGateRequest ./namesrv/liverecord:FuzzDecode \
	./namesrv/httpapi:FuzzParseBearer ./namesrv/httpapi:FuzzParseTokens ./namesrv/authz:FuzzParsePolicy \
	./internal/nsadmin:FuzzDecodeAnswers ./internal/migrate:FuzzConvert

.PHONY: fuzz-short
fuzz-short: ## Fuzz every decoder briefly.
	@for t in $(FUZZ_TARGETS); do pkg=$${t%%:*}; fn=$${t##*:}; \
	  echo "fuzz $$pkg $$fn ($(FUZZTIME_SHORT))"; \
	  $(GO) test -run='^$$' -fuzz="^$$fn\$$" -fuzztime=$(FUZZTIME_SHORT) $$pkg; done

.PHONY: fuzz
fuzz: ## Fuzz every decoder for FUZZTIME each.
	@$(MAKE) fuzz-short FUZZTIME_SHORT=$(FUZZTIME)

##@ Performance (docs/benchmarks.md)

.PHONY: bench
bench: ## Go benchmarks of the hot paths (codec, routes, registrations).
	$(GO) test -run='^$$' -bench=. -benchmem ./namesrv/...

# Whole nsadmin runs, exec to exit, against three namesrv processes on
# loopback (cmd/nsadmin/bench_test.go builds both), with p50 and p90.
.PHONY: bench-nsadmin
bench-nsadmin: ## Time nsadmin commands, process start included, against three peers.
	$(GO) test -run='^$$' -bench=BenchmarkProcess -benchtime=200x ./cmd/nsadmin/

# The load scenarios of docs/benchmarks.md, each against a freshly spawned
# namesrv on loopback.
.PHONY: bench-load
bench-load: build nsbench ## Route, registration and mixed loads with nsbench, then the cost curves (bench-curves).
	$(LOCALBIN)/nsbench -spawn $(LOCALBIN)/namesrv -mode start
	$(LOCALBIN)/nsbench -spawn $(LOCALBIN)/namesrv -mode route -conns 4 -inflight 64 -topics 100 -duration 20s
	$(LOCALBIN)/nsbench -spawn $(LOCALBIN)/namesrv -mode route -conns 4 -inflight 64 -topics 100 -duration 20s -version 317
	$(LOCALBIN)/nsbench -spawn $(LOCALBIN)/namesrv -mode register -brokers 1 -topics-per-broker 10000 -interval 500ms -duration 20s
	$(LOCALBIN)/nsbench -spawn $(LOCALBIN)/namesrv -mode register -brokers 1 -topics-per-broker 10000 -interval 500ms -duration 20s -compressed
	$(LOCALBIN)/nsbench -spawn $(LOCALBIN)/namesrv -mode register -brokers 1 -topics-per-broker 10000 -interval 500ms -duration 20s -new-version
	$(LOCALBIN)/nsbench -spawn $(LOCALBIN)/namesrv -mode register -brokers 100 -topics-per-broker 1000 -interval 30s -duration 35s
	$(LOCALBIN)/nsbench -spawn $(LOCALBIN)/namesrv -mode register -brokers 100 -topics-per-broker 1000 -interval 30s -duration 35s -shared-topics
	$(LOCALBIN)/nsbench -spawn $(LOCALBIN)/namesrv -mode mixed -conns 4 -inflight 64 -topics 100 -duration 20s -brokers 10 -topics-per-broker 1000 -interval 1s -windows 10
	$(LOCALBIN)/nsbench -spawn $(LOCALBIN)/namesrv -mode mixed -conns 4 -inflight 64 -topics 100 -duration 20s -brokers 10 -topics-per-broker 1000 -interval 1s -windows 10 -new-version
	$(MAKE) bench-curves

# The operator against fleets of NameServerClusters (docs/benchmarks.md,
# "Fleet"): the real manager against envtest, the pods and NameServer peers
# simulated by tools/fleetbench, each size of FLEET_CLUSTERS from a fresh
# control plane and manager. The table goes between the fleet:begin and
# fleet:end lines of docs/benchmarks.md, the CSV to docs/fleet.csv.
# FLEET_FLAGS adds fleetbench flags (-round, -window, -unready,
# -max-concurrent-reconciles, -kube-api-qps, -kube-api-burst; fleetbench -h).
FLEET_CLUSTERS ?= 100,300,1000
FLEET_FLAGS ?=

.PHONY: bench-fleet
bench-fleet: build envtest-assets | $(LOCALBIN) ## The operator against fleets of FLEET_CLUSTERS clusters (simulated peers on envtest) into docs/benchmarks.md's "Fleet".
	CGO_ENABLED=0 $(GO) build -C tools -trimpath -o $(LOCALBIN)/fleetbench ./fleetbench
	KUBEBUILDER_ASSETS="$$(hack/envtest-binaries.sh)" $(LOCALBIN)/fleetbench -manager $(LOCALBIN)/manager \
	  -clusters $(FLEET_CLUSTERS) $(FLEET_FLAGS) -csv docs/fleet.csv -doc docs/benchmarks.md \
	  -command "make bench-fleet FLEET_CLUSTERS=$(FLEET_CLUSTERS)$(if $(FLEET_FLAGS), FLEET_FLAGS='$(FLEET_FLAGS)')"

# docs/benchmarks.md's cost curves: memory, registration CPU, route CPU and
# p99 against size, and a restart storm, each point against a freshly
# spawned namesrv (4-5 minutes on 2 cores). The CSV and Markdown tables
# go to CURVES_DIR; the SVGs and the report between the curves:begin and
# curves:end lines of docs/benchmarks.md are drawn from them.
CURVES_DIR ?= docs/curves
CURVES_FLAGS ?=

.PHONY: bench-curves
bench-curves: build nsbench ## Measure the cost curves into docs/curves and redraw their SVGs and report (CURVES_FLAGS for nsbench -mode curves).
	$(LOCALBIN)/nsbench -spawn $(LOCALBIN)/namesrv -mode curves -out $(CURVES_DIR) $(CURVES_FLAGS)
	$(MAKE) bench-plot

# bench-plot draws another NameServer's curves (the CSV files in
# CURVES_COMPARE, measured by the same sweep) dashed beside ours, and sets
# them beside ours point by point; CURVES_COMPARE= leaves them out.
CURVES_COMPARE ?= $(CURVES_DIR)/java-4.9.8
CURVES_COMPARE_LABEL ?= Java 4.9.8

.PHONY: bench-plot
bench-plot: nsbench ## Redraw the cost curves' SVGs and docs/benchmarks.md's report from the CSV files in docs/curves (and CURVES_COMPARE's beside them).
	$(LOCALBIN)/nsbench -mode plot -out $(CURVES_DIR) -doc docs/benchmarks.md -compare "$(CURVES_COMPARE)" -compare-label "$(CURVES_COMPARE_LABEL)"

# The Java NameServer's curves, measured as ours are, with the Java server
# started by tools/nsbench/rocketmq-namesrv.sh: ROCKETMQ_HOME is a RocketMQ
# 4.9.x distribution, java is JAVA_HOME's or the PATH's. The grid is the one
# of docs/curves/java-4.9.8 (the registration curve stops at 10,000 topics:
# at 100,000 Java's NameServer runs out of its 4 GiB heap).
JAVA_CURVES_FLAGS ?= -curves memory,register,storm -mem-brokers 100 -mem-entries 10000,100000,1000000 -reg-topics 1000,10000 -storm-brokers 100,1000

.PHONY: bench-curves-java
bench-curves-java: nsbench ## Measure the Java NameServer's curves into CURVES_COMPARE (needs ROCKETMQ_HOME) and redraw the report.
	@test -n "$(ROCKETMQ_HOME)" && test -d "$(ROCKETMQ_HOME)/lib" || { echo "set ROCKETMQ_HOME to a RocketMQ 4.9.x distribution (its lib/ and conf/)"; exit 1; }
	ROCKETMQ_HOME="$(ROCKETMQ_HOME)" $(LOCALBIN)/nsbench -spawn-timeout 60s -mode curves -out $(CURVES_COMPARE) $(JAVA_CURVES_FLAGS) \
		-spawn-cmd 'exec tools/nsbench/rocketmq-namesrv.sh --listen-port {port} --kv-config-path {kv} --config-store-path {config}'
	$(MAKE) bench-plot

##@ Tools

$(LOCALBIN):
	mkdir -p $(LOCALBIN)

$(CONTROLLER_GEN): | $(LOCALBIN)
	GOBIN=$(LOCALBIN) $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)

# Phony with a version check inside, so a stale bin/golangci-lint is replaced.
GOLANGCI_LINT_VERSION ?= v2.15.0
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint

.PHONY: golangci-lint
golangci-lint: | $(LOCALBIN) ## Build golangci-lint (GOLANGCI_LINT_VERSION) into bin/ from the Go module proxy when missing or another version.
	@if [ "$$($(GOLANGCI_LINT) version --short 2>/dev/null)" != "$(GOLANGCI_LINT_VERSION:v%=%)" ]; then \
	  echo "building golangci-lint $(GOLANGCI_LINT_VERSION) into $(GOLANGCI_LINT) (minutes with an empty Go cache)"; \
	  GOBIN=$(LOCALBIN) CGO_ENABLED=0 $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION); fi

# Phony with a version check inside, so a stale bin/crd-ref-docs is replaced.
CRD_REF_DOCS_VERSION ?= v0.3.0
CRD_REF_DOCS ?= $(LOCALBIN)/crd-ref-docs

.PHONY: crd-ref-docs
crd-ref-docs: | $(LOCALBIN) ## Build crd-ref-docs (CRD_REF_DOCS_VERSION), which writes the API reference, into bin/.
	@if ! grep -qxF "Version: $(CRD_REF_DOCS_VERSION)" <<<"$$($(CRD_REF_DOCS) --version 2>/dev/null)"; then \
	  echo "building crd-ref-docs $(CRD_REF_DOCS_VERSION) into $(CRD_REF_DOCS)"; \
	  GOBIN=$(LOCALBIN) CGO_ENABLED=0 $(GO) install github.com/elastic/crd-ref-docs@$(CRD_REF_DOCS_VERSION); fi

$(GOVULNCHECK): | $(LOCALBIN)
	GOBIN=$(LOCALBIN) $(GO) install golang.org/x/vuln/cmd/govulncheck@$(GOVULNCHECK_VERSION)

$(INDEXDB): | $(LOCALBIN)
	GOBIN=$(LOCALBIN) $(GO) install golang.org/x/vulndb/cmd/indexdb@$(VULNDB_VERSION)

# helm's own version and the Kubernetes version `helm template` and
# `helm lint` assume are link-time variables; a plain `go install` reports
# v3.22 and assumes Kubernetes 1.20. The minor comes from the envtest pin.
HELM_K8S_MINOR ?= $(shell awk '{for(i=1;i<NF;i++) if($$i=="k8s.io/kubernetes"){split($$(i+1),v,"."); print v[2]; exit}}' hack/envtest/k8s/go.mod)
HELM_LDFLAGS = -s -w -X helm.sh/helm/v3/internal/version.version=$(HELM_VERSION) \
	$(foreach p,chartutil lint/rules,-X helm.sh/helm/v3/pkg/$(p).k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/$(p).k8sVersionMinor=$(HELM_K8S_MINOR))

# Phony with a version check inside, so a stale bin/promtool is replaced.
# promtool prints its version without the v. remove_all_sd leaves out the
# cloud service discoveries (and half the build); promtool keeps the
# Kubernetes one, which config/prometheus/prometheus.yaml uses.
.PHONY: promtool
promtool: | $(LOCALBIN) ## Build promtool (PROMETHEUS_VERSION, from hack/promql/go.mod) into bin/ from the Go module proxy when missing or another version.
	@if ! $(PROMTOOL) --version 2>/dev/null | grep -qF "version $(PROMETHEUS_VERSION:v%=%) "; then \
	  echo "building promtool $(PROMETHEUS_VERSION) into $(PROMTOOL) (minutes with an empty Go cache)"; \
	  GOBIN=$(LOCALBIN) CGO_ENABLED=0 $(GO) install -trimpath -tags remove_all_sd \
	    -ldflags "-s -w -X github.com/prometheus/common/version.Version=$(PROMETHEUS_VERSION:v%=%)" \
	    github.com/prometheus/prometheus/cmd/promtool@$(PROMETHEUS_VERSION); fi

# go build is incremental: a no-op when nothing changed.
.PHONY: promql
promql: | $(LOCALBIN) ## Build bin/promql (hack/promql), which lists the names a PromQL expression uses.
	CGO_ENABLED=0 $(GO) build -C hack/promql -trimpath -o $(PROMQL) .

# Phony with a version check inside, so a stale bin/helm is replaced.
.PHONY: helm
helm: | $(LOCALBIN) ## Build helm (HELM_VERSION) into bin/ from the Go module proxy when missing or another version.
	@if [ "$$($(HELM) version --template '{{.Version}}' 2>/dev/null)" != "$(HELM_VERSION)" ]; then \
	  echo "building helm $(HELM_VERSION) into $(HELM) (about a minute with an empty Go cache)"; \
	  GOBIN=$(LOCALBIN) CGO_ENABLED=0 $(GO) install -trimpath -ldflags "$(HELM_LDFLAGS)" helm.sh/helm/v3/cmd/helm@$(HELM_VERSION); fi
