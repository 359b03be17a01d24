module github.com/kube-namesrv/kube-namesrv/tools

go 1.26.0

toolchain go1.26.10

require github.com/kube-namesrv/kube-namesrv v0.0.0

require (
	github.com/klauspost/compress v1.20.1 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	golang.org/x/time v0.15.0 // indirect
)

replace github.com/kube-namesrv/kube-namesrv => ../
