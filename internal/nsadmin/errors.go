package nsadmin

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kube-namesrv/kube-namesrv/internal/remotingclient"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
	"github.com/kube-namesrv/kube-namesrv/namesrv/remoting"
)

// Exit codes. When several apply, the first in this order wins: usage,
// failed, refused, differences.
const (
	ExitOK = 0
	// ExitDifferent: diff found the peers disagree.
	ExitDifferent = 1
	// ExitUsage: bad flags or arguments, nothing was sent.
	ExitUsage = 2
	// ExitFailed: a peer could not be reached or did not answer as a
	// NameServer (refused connection, timeout, TLS or protocol mismatch).
	ExitFailed = 3
	// ExitRefused: a peer answered with an error code.
	ExitRefused = 4
)

// ExitCodesHelp documents the exit codes for `help`.
const ExitCodesHelp = `Exit codes:
  0  success (and, for diff, every peer agrees)
  1  diff: the peers disagree
  2  usage error: bad flags or arguments; nothing was sent
  3  a peer could not be reached or did not answer as a NameServer
     (connection refused, timeout, name not resolving, TLS or protocol mismatch)
  4  a peer refused the request (it answered with an error code)
When several apply, the first of 2, 3, 4, 1 wins.`

// Kind classifies a failure of one peer.
type Kind int

// Kinds of peer failures.
const (
	// Unreachable: no connection, or no answer in time.
	Unreachable Kind = iota + 1
	// Protocol: the peer answered, but not as a NameServer does.
	Protocol
	// Refused: the peer answered the request with an error code.
	Refused
)

// PeerError is why one peer did not give an answer.
type PeerError struct {
	Addr string
	Kind Kind
	// Code and Remark are the refusal's, for Refused.
	Code   int32
	Remark string
	// Msg says what happened in words; Hint what to try.
	Msg  string
	Hint string
	Err  error
}

func (e *PeerError) Error() string {
	var b strings.Builder
	b.WriteString(e.Addr)
	b.WriteString(": ")
	b.WriteString(e.Msg)
	if e.Hint != "" {
		b.WriteString(" (")
		b.WriteString(e.Hint)
		b.WriteString(")")
	}
	return b.String()
}

func (e *PeerError) Unwrap() error { return e.Err }

// exitCode is the exit code of a failure.
func (e *PeerError) exitCode() int {
	if e.Kind == Refused {
		return ExitRefused
	}
	return ExitFailed
}

// CodeName is the Java name of a response code (ResponseCode,
// RemotingSysResponseCode).
func CodeName(code int32) string {
	switch code {
	case protocol.Success:
		return "SUCCESS"
	case protocol.SystemError:
		return "SYSTEM_ERROR"
	case protocol.SystemBusy:
		return "SYSTEM_BUSY"
	case protocol.RequestCodeNotSupported:
		return "REQUEST_CODE_NOT_SUPPORTED"
	case protocol.NoPermission:
		return "NO_PERMISSION"
	case protocol.TopicNotExist:
		return "TOPIC_NOT_EXIST"
	case protocol.QueryNotFound:
		return "QUERY_NOT_FOUND"
	}
	return "code " + strconv.Itoa(int(code))
}

// refused describes an error answer, with a hint for the refusals an
// operator meets.
func refused(addr string, r *remotingclient.Response) *PeerError {
	e := &PeerError{Addr: addr, Kind: Refused, Code: r.Code, Remark: r.Remark}
	remark := strings.TrimSpace(r.Remark)
	// Java appends a FAQ link to "no route" remarks; the first line says it.
	remark, _, _ = strings.Cut(remark, "\n")
	e.Msg = "refused: " + CodeName(r.Code)
	if remark != "" {
		e.Msg += ": " + remark
	}
	switch {
	case r.Code == protocol.SystemError && remark == "disable":
		e.Hint = "the NameServer has this list switched off: enableAllTopicList / enableTopicList"
	case r.Code == protocol.RequestCodeNotSupported:
		e.Hint = "this NameServer does not know the request; it is older than the command"
	case r.Code == protocol.NoPermission && strings.HasPrefix(remark, "no permission: "):
		e.Hint = "the NameServer authorizes requests by role (authzEnable): present a client certificate holding it with --tls-cert and --tls-key"
	case r.Code == protocol.NoPermission:
		e.Hint = "the key is in the NameServer's configBlackList"
	case r.Code == protocol.SystemError && remark == "name server not ready":
		e.Hint = "the NameServer is in its start-up wait (needWaitForService)"
	}
	return e
}

// dialFailed describes a connection that could not be made.
func dialFailed(addr string, timeout time.Duration, err error) *PeerError {
	e := &PeerError{Addr: addr, Kind: Unreachable, Err: err}
	var dns *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		e.Msg = "unreachable: nothing listens there (connection refused)"
	case errors.As(err, &dns):
		e.Msg = fmt.Sprintf("unreachable: the name %s does not resolve", dns.Name)
		if dns.Err != "" {
			e.Msg += " (" + dns.Err + ")"
		}
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		e.Msg = fmt.Sprintf("unreachable: no connection within %s", timeout)
	case errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH):
		e.Msg = "unreachable: no route to it"
	default:
		e.Msg = "unreachable: " + err.Error()
	}
	return e
}

// handshakeFailed describes a TLS handshake that did not complete.
func handshakeFailed(addr string, timeout time.Duration, err error) *PeerError {
	e := &PeerError{Addr: addr, Kind: Protocol, Err: err, Msg: "TLS handshake failed: " + err.Error()}
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var rec tls.RecordHeaderError
	switch {
	case errors.As(err, &rec):
		e.Msg = "does not speak TLS on this port"
		e.Hint = "drop --tls, or check the port"
	case errors.As(err, &unknownCA):
		e.Msg = "TLS: the server's certificate is not signed by a trusted CA"
		e.Hint = "pass --tls-ca FILE, or --tls-insecure-skip-verify"
	case errors.As(err, &hostname):
		e.Msg = "TLS: " + hostname.Error()
		e.Hint = "pass --tls-server-name with a name the certificate holds"
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		e.Kind = Unreachable
		e.Msg = fmt.Sprintf("TLS handshake not finished within %s", timeout)
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		e.Msg = "closed the connection during the TLS handshake"
		e.Hint = "the NameServer may have TLS disabled (drop --tls), or require a client certificate (--tls-cert, --tls-key)"
	}
	return e
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// invokeFailed describes a request that got no answer. head is what the
// peer sent first on the connection, which tells an HTTP or TLS port, or a
// server of another protocol, from a lost connection.
func invokeFailed(addr string, timeout time.Duration, usedTLS bool, head []byte, err error) *PeerError {
	e := &PeerError{Addr: addr, Kind: Protocol, Err: err}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		e.Kind = Unreachable
		e.Msg = fmt.Sprintf("no answer within %s", timeout)
		if len(head) == 0 {
			// An HTTP server, for one, waits for a line end that a
			// remoting frame never sends.
			e.Hint = "check it is the remoting port (9876 by default): other ports, the NameServer's HTTP port among them, never answer"
		}
	case !errors.Is(err, remotingclient.ErrClosed):
		e.Kind = Unreachable
		e.Msg = "request failed: " + err.Error()
	case len(head) == 0:
		e.Msg = "closed the connection without answering"
		if !usedTLS {
			e.Hint = "a NameServer enforcing TLS does this to plain clients: try --tls"
		}
	case strings.HasPrefix(string(head), "HTTP/"):
		e.Msg = "answered in HTTP: this is an HTTP port, not the remoting port (9876 by default)"
	case head[0] == 0x15 && len(head) > 1 && head[1] == 0x03:
		e.Msg = "answered with a TLS alert: the port expects TLS"
		e.Hint = "add --tls"
	case len(head) >= 5 && remoting.SerializeType(head[4]) != remoting.JSON && remoting.SerializeType(head[4]) != remoting.RocketMQ:
		e.Msg = fmt.Sprintf("answered with serialize type %d, which is neither JSON (0) nor ROCKETMQ (1): not a RocketMQ remoting server", head[4])
	default:
		e.Msg = "connection lost: " + strings.TrimPrefix(err.Error(), remotingclient.ErrClosed.Error()+": ")
	}
	return e
}

// badAnswer describes a success answer whose body does not decode.
func badAnswer(addr string, err error) *PeerError {
	return &PeerError{Addr: addr, Kind: Protocol, Err: err, Msg: err.Error()}
}
