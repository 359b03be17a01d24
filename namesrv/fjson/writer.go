package fjson

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Dialect selects how a body is written.
type Dialect uint8

const (
	// Legacy is fastjson's default output: integer map keys bare, raw UTF-8,
	// '/' left alone. Every body of the Java NameServer uses it except routes
	// asked for by new clients.
	Legacy Dialect = iota
	// Standard is fastjson with BrowserCompatible: quoted map keys, '/' as
	// "\/", and every non-ASCII character as an uppercase \uXXXX escape. Java
	// answers route queries in it for request version >= 401 or
	// acceptStandardJsonOnly=true.
	Standard
)

const hexDigits = "0123456789ABCDEF"

// AppendString appends s as a JSON string in dialect d.
func AppendString[T string | []byte](dst []byte, s T, d Dialect) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf && (c != '/' || d == Legacy) {
			i++
			continue
		}
		if c >= utf8.RuneSelf && d == Legacy {
			i++
			continue
		}
		dst = append(dst, s[start:i]...)
		switch {
		case c == '"' || c == '\\' || c == '/':
			dst = append(dst, '\\', c)
			i++
		case c == '\n':
			dst = append(dst, '\\', 'n')
			i++
		case c == '\r':
			dst = append(dst, '\\', 'r')
			i++
		case c == '\t':
			dst = append(dst, '\\', 't')
			i++
		case c == '\b':
			dst = append(dst, '\\', 'b')
			i++
		case c == '\f':
			dst = append(dst, '\\', 'f')
			i++
		case c < 0x20:
			dst = appendU(dst, rune(c))
			i++
		default:
			var buf [utf8.UTFMax]byte
			r, size := utf8.DecodeRune(buf[:copy(buf[:], s[i:])])
			if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
				dst = appendU(appendU(dst, r1), r2)
			} else {
				dst = appendU(dst, r)
			}
			i += size
		}
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

func appendU(dst []byte, r rune) []byte {
	return append(dst, '\\', 'u', hexDigits[r>>12&0xF], hexDigits[r>>8&0xF], hexDigits[r>>4&0xF], hexDigits[r&0xF])
}

// AppendInt appends a decimal integer.
func AppendInt(dst []byte, v int64) []byte { return strconv.AppendInt(dst, v, 10) }

// AppendIntKey appends an integer map key: bare in the legacy dialect,
// quoted in the standard one.
func AppendIntKey(dst []byte, v int64, d Dialect) []byte {
	if d == Standard {
		dst = append(dst, '"')
		dst = strconv.AppendInt(dst, v, 10)
		return append(dst, '"', ':')
	}
	dst = strconv.AppendInt(dst, v, 10)
	return append(dst, ':')
}

// AppendValue writes a passed-through value back in dialect d: bare member
// names stay bare in the legacy dialect and are quoted in the standard one.
func AppendValue(dst []byte, v *Value, d Dialect) []byte {
	switch v.Kind {
	case Null:
		return append(dst, "null"...)
	case Bool, Number:
		return append(dst, v.Text...)
	case String:
		return AppendString(dst, v.Text, d)
	case Array:
		dst = append(dst, '[')
		for i := range v.Items {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendValue(dst, &v.Items[i], d)
		}
		return append(dst, ']')
	}
	dst = append(dst, '{')
	for i := range v.Members {
		m := &v.Members[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		if m.Bare && d == Legacy {
			dst = append(dst, m.Key...)
		} else {
			dst = AppendString(dst, m.Key, d)
		}
		dst = append(dst, ':')
		dst = AppendValue(dst, &m.Value, d)
	}
	return append(dst, '}')
}
