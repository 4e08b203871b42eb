package kafka

import (
	"strings"
	"testing"
)

func TestSchemaRegistryConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    SchemaRegistryConfig
		want string // in the error; empty: valid
	}{
		{"none", SchemaRegistryConfig{}, ""},
		{"plain", SchemaRegistryConfig{URL: "http://registry:8081"}, ""},
		{"credentials", SchemaRegistryConfig{URL: "https://registry", Username: "u", Password: "p", TLS: TLSConfig{Enabled: true}}, ""},
		{"credentials without url", SchemaRegistryConfig{Username: "u"}, "kafka.schema_registry.username: set, but kafka.schema_registry.url is empty"},
		{"half the credentials", SchemaRegistryConfig{URL: "http://r", Username: "u"}, "set both or neither"},
		{"no scheme", SchemaRegistryConfig{URL: "registry:8081"}, "kafka.schema_registry.url"},
		{"tls on http", SchemaRegistryConfig{URL: "http://r", TLS: TLSConfig{Enabled: true}}, "kafka.schema_registry.tls.enabled"},
		{"tls files", SchemaRegistryConfig{URL: "https://r", TLS: TLSConfig{Enabled: true, CAFile: "/nonexistent/ca.pem"}}, "kafka.schema_registry.tls.ca_file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("%v, want %q", err, tc.want)
			}
			if tc.c.URL == "" {
				return
			}
			cl, err := tc.c.Client()
			if (cl != nil) != (tc.want == "") || (err != nil) != (tc.want != "") {
				t.Errorf("client %v %v", cl, err)
			}
		})
	}
}
