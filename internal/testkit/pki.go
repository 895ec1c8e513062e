package testkit

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// PKI is a CA, a server certificate for 127.0.0.1 and a client
// certificate it signed, plus a client certificate from another CA, all
// made for the test and written as PEM files under a temporary directory.
type PKI struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey, RogueCert, RogueKey string // file paths
	// Pool holds the CA; Client and Rogue are the client certificates.
	Pool          *x509.CertPool
	Client, Rogue tls.Certificate
}

// NewPKI makes a PKI for the test, its files under t.TempDir().
func NewPKI(t testing.TB) *PKI {
	t.Helper()
	dir := t.TempDir()
	p := &PKI{Pool: x509.NewCertPool()}
	write := func(name string, blockType string, der []byte) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der}), 0o600))
		return path
	}
	serial := int64(1)
	issue := func(tmpl *x509.Certificate, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey, []byte, []byte) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		serial++
		tmpl.SerialNumber = big.NewInt(serial)
		tmpl.NotBefore = time.Now().Add(-time.Hour)
		tmpl.NotAfter = time.Now().Add(24 * time.Hour)
		if parent == nil {
			parent, parentKey = tmpl, key
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
		require.NoError(t, err)
		cert, err := x509.ParseCertificate(der)
		require.NoError(t, err)
		keyDER, err := x509.MarshalECPrivateKey(key)
		require.NoError(t, err)
		return cert, key, der, keyDER
	}
	caTmpl := func(name string) *x509.Certificate {
		return &x509.Certificate{Subject: pkix.Name{CommonName: name}, IsCA: true, BasicConstraintsValid: true,
			KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	}
	leaf := func(name string, usage x509.ExtKeyUsage) *x509.Certificate {
		return &x509.Certificate{Subject: pkix.Name{CommonName: name}, KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"}}
	}
	ca, caKey, caDER, _ := issue(caTmpl("redcell test CA"), nil, nil)
	p.CA = write("ca.pem", "CERTIFICATE", caDER)
	p.Pool.AddCert(ca)
	_, _, der, keyDER := issue(leaf("redcell test server", x509.ExtKeyUsageServerAuth), ca, caKey)
	p.ServerCert, p.ServerKey = write("server.pem", "CERTIFICATE", der), write("server.key", "EC PRIVATE KEY", keyDER)
	_, _, der, keyDER = issue(leaf("redcell test client", x509.ExtKeyUsageClientAuth), ca, caKey)
	p.ClientCert, p.ClientKey = write("client.pem", "CERTIFICATE", der), write("client.key", "EC PRIVATE KEY", keyDER)
	rogueCA, rogueKey, _, _ := issue(caTmpl("some other CA"), nil, nil)
	_, _, der, keyDER = issue(leaf("rogue client", x509.ExtKeyUsageClientAuth), rogueCA, rogueKey)
	p.RogueCert, p.RogueKey = write("rogue.pem", "CERTIFICATE", der), write("rogue.key", "EC PRIVATE KEY", keyDER)
	var err error
	p.Client, err = tls.LoadX509KeyPair(p.ClientCert, p.ClientKey)
	require.NoError(t, err)
	p.Rogue, err = tls.LoadX509KeyPair(p.RogueCert, p.RogueKey)
	require.NoError(t, err)
	return p
}

// ClientTLS trusts the test CA and presents cert, if given, whatever CAs
// the server says it accepts (Go's client would otherwise keep a
// certificate from another CA to itself).
func (p *PKI) ClientTLS(cert ...tls.Certificate) *tls.Config {
	cfg := &tls.Config{RootCAs: p.Pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	if len(cert) > 0 {
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert[0], nil }
	}
	return cfg
}
