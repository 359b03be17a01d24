package nsadmin

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kube-namesrv/kube-namesrv/internal/remotingclient"
	"github.com/kube-namesrv/kube-namesrv/namesrv/protocol"
)

func TestParseAddrs(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
		err  string
	}{
		{"a:9876;b:9876", []string{"a:9876", "b:9876"}, ""},
		{" a:9876 ; b:9876 ;a:9876;", []string{"a:9876", "b:9876"}, ""},
		{"a:9876,[::1]:9876", []string{"a:9876", "[::1]:9876"}, ""},
		{"a", nil, `"a" is not host:port`},
		{":9876", nil, `":9876" is not host:port`},
		{"a:", nil, `"a:" is not host:port`},
		{" ; ", nil, "empty"},
	} {
		got, err := ParseAddrs(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: %v, want an error with %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("%q: %q %v, want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestDialFailures(t *testing.T) {
	for _, tt := range []struct {
		err  error
		msg  string
		kind Kind
	}{
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, "unreachable: nothing listens there (connection refused)", Unreachable},
		{&net.OpError{Op: "dial", Err: &net.DNSError{Name: "ns-0.x.svc", Err: "no such host", IsNotFound: true}}, "unreachable: the name ns-0.x.svc does not resolve (no such host)", Unreachable},
		{fmt.Errorf("dial: %w", context.DeadlineExceeded), "unreachable: no connection within 2s", Unreachable},
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.EHOSTUNREACH)}, "unreachable: no route to it", Unreachable},
		{errors.New("odd"), "unreachable: odd", Unreachable},
	} {
		e := dialFailed("x:1", 2*time.Second, tt.err)
		if e.Msg != tt.msg || e.Kind != tt.kind || e.exitCode() != ExitFailed || !errors.Is(e, tt.err) {
			t.Errorf("%v: %q kind %d", tt.err, e.Msg, e.Kind)
		}
	}
}

func TestHandshakeFailures(t *testing.T) {
	for _, tt := range []struct {
		err  error
		msg  string
		hint string
	}{
		{tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}, "does not speak TLS on this port", "drop --tls"},
		{&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}, "not signed by a trusted CA", "--tls-ca"},
		{&tls.CertificateVerificationError{Err: x509.HostnameError{Certificate: &x509.Certificate{DNSNames: []string{"a"}}, Host: "b"}}, "not b", "--tls-server-name"},
		{io.EOF, "closed the connection during the TLS handshake", "client certificate"},
		{context.DeadlineExceeded, "TLS handshake not finished within 1s", ""},
	} {
		e := handshakeFailed("x:1", time.Second, tt.err)
		if !strings.Contains(e.Msg, tt.msg) || !strings.Contains(e.Hint, tt.hint) {
			t.Errorf("%v: %q (%q), want %q (%q)", tt.err, e.Msg, e.Hint, tt.msg, tt.hint)
		}
	}
}

func TestInvokeFailures(t *testing.T) {
	closed := fmt.Errorf("%w: EOF", remotingclient.ErrClosed)
	for _, tt := range []struct {
		head    []byte
		err     error
		usedTLS bool
		msg     string
		hint    string
	}{
		{nil, fmt.Errorf("request 106: %w", context.DeadlineExceeded), false, "no answer within 1s", "remoting port"},
		{[]byte{0, 0, 0, 9}, fmt.Errorf("request 106: %w", context.DeadlineExceeded), false, "no answer within 1s", ""},
		{nil, closed, false, "closed the connection without answering", "try --tls"},
		{nil, closed, true, "closed the connection without answering", ""},
		{[]byte("HTTP/1.1"), closed, false, "answered in HTTP", ""},
		{[]byte{0x15, 0x03, 0x03, 0, 2, 2, 70}, closed, false, "answered with a TLS alert", "add --tls"},
		{[]byte{0, 0, 0, 6, 9, 0, 0, 2}, closed, false, "serialize type 9, which is neither JSON (0) nor ROCKETMQ (1)", ""},
		{[]byte{0, 0, 0, 6, 0, 0, 0, 2}, fmt.Errorf("%w: reset", remotingclient.ErrClosed), false, "connection lost: reset", ""},
		{nil, errors.New("send request 106: broken pipe"), false, "request failed: send request 106: broken pipe", ""},
	} {
		e := invokeFailed("x:1", time.Second, tt.usedTLS, tt.head, tt.err)
		if !strings.Contains(e.Msg, tt.msg) || !strings.Contains(e.Hint, tt.hint) || (tt.hint == "" && e.Hint != "") {
			t.Errorf("%q %v: %q (%q), want %q (%q)", tt.head, tt.err, e.Msg, e.Hint, tt.msg, tt.hint)
		}
	}
}

func TestRefusals(t *testing.T) {
	for _, tt := range []struct {
		code   int32
		remark string
		msg    string
		hint   string
	}{
		{protocol.SystemError, "disable", "refused: SYSTEM_ERROR: disable", "enableAllTopicList"},
		{protocol.NoPermission, "Can not update config in black list.", "refused: NO_PERMISSION: Can not update config in black list.", "configBlackList"},
		{protocol.RequestCodeNotSupported, " request type 9 not supported", "refused: REQUEST_CODE_NOT_SUPPORTED: request type 9 not supported", "older"},
		{protocol.SystemError, "name server not ready", "refused: SYSTEM_ERROR: name server not ready", "needWaitForService"},
		{protocol.TopicNotExist, "No topic route info in name server for the topic: T\nSee https://x for further details.", "refused: TOPIC_NOT_EXIST: No topic route info in name server for the topic: T", ""},
		{77, "", "refused: code 77", ""},
	} {
		e := refused("x:1", &remotingclient.Response{Code: tt.code, Remark: tt.remark})
		if e.Msg != tt.msg || !strings.Contains(e.Hint, tt.hint) || e.exitCode() != ExitRefused || e.Code != tt.code {
			t.Errorf("%d %q: %q (%q)", tt.code, tt.remark, e.Msg, e.Hint)
		}
	}
}

func TestWorstExitCode(t *testing.T) {
	failed := &PeerError{Kind: Unreachable}
	refusal := &PeerError{Kind: Refused}
	protocolErr := &PeerError{Kind: Protocol}
	for _, tt := range []struct {
		code  int
		probs []*PeerError
		want  int
	}{
		{ExitOK, nil, ExitOK},
		{ExitDifferent, nil, ExitDifferent},
		{ExitDifferent, []*PeerError{refusal}, ExitRefused},
		{ExitOK, []*PeerError{refusal, failed}, ExitFailed},
		{ExitOK, []*PeerError{failed, refusal}, ExitFailed},
		{ExitDifferent, []*PeerError{protocolErr}, ExitFailed},
	} {
		if got := worst(tt.code, tt.probs); got != tt.want {
			t.Errorf("worst(%d, %d problems) = %d, want %d", tt.code, len(tt.probs), got, tt.want)
		}
	}
}
