# One image for the operator (/manager, the entrypoint), the NameServer
# (/namesrv, which the NameServer pods run as their command) and the admin
# tools (/nsadmin, and /kubectl-nsc for a pod with a service account):
#   docker build --build-arg VERSION=v0.1.0 -t kube-namesrv/kube-namesrv:v0.1.0 .
# VERSION has no default here: the manager deploys <its image>:VERSION as the
# NameServer image, so it must match the tag being built.
FROM golang:1.26.10 AS build
ARG VERSION
WORKDIR /src
# Modules first, so a source change reuses the downloaded modules.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The same script `make image-binaries` runs in CI.
RUN VERSION="$VERSION" hack/build-binaries.sh /out

# scratch: static binaries need nothing else, and nothing else can be exploited.
FROM scratch
COPY --from=build /out/manager /out/namesrv /out/nsadmin /out/kubectl-nsc /
# 65532 is the non-root user the pod security contexts run as.
USER 65532:65532
ENTRYPOINT ["/manager"]
