package kafka

import (
	"errors"
	"fmt"
	"net/url"

	"github.com/twmb/franz-go/pkg/sr"
)

// SchemaRegistryConfig says where the schemas of light-scheduler's Avro
// records are registered: a Confluent-compatible schema registry.
type SchemaRegistryConfig struct {
	// URL of the registry, http:// or https://. Empty: with the embedded
	// broker, jobdrop serves a registry of its own under the console
	// (/schema-registry) and uses it; with Brokers, Avro commands are
	// refused.
	URL string `yaml:"url"`
	// Username and Password authenticate to the registry with HTTP basic
	// credentials. Both or neither.
	Username string `yaml:"username"`
	Password string `yaml:"password"`
	// TLS secures an https:// URL, with the same keys as the brokers'
	// TLS; it requires one.
	TLS TLSConfig `yaml:"tls"`
}

// validate checks c; errors name the keys at fault.
func (c SchemaRegistryConfig) validate() error {
	const at = "kafka.schema_registry"
	if c.URL == "" {
		return errors.Join(setWithout(at+".url is empty", at+".", "username", c.Username, "password", c.Password),
			c.TLS.validateAt(at+".tls"))
	}
	var errs []error
	u, err := url.Parse(c.URL)
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("%s.url: %w", at, err))
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		errs = append(errs, fmt.Errorf("%s.url: %q: want http://host:port or https://host:port", at, c.URL))
	case c.TLS.Enabled && u.Scheme != "https":
		errs = append(errs, fmt.Errorf("%s.tls.enabled: the url %q is not https://", at, c.URL))
	}
	if (c.Username == "") != (c.Password == "") {
		errs = append(errs, fmt.Errorf("%[1]s.username, %[1]s.password: set both or neither", at))
	}
	errs = append(errs, c.TLS.validateAt(at+".tls"))
	return errors.Join(errs...)
}

// Client is a client of the registry c names, nil when it names none.
func (c SchemaRegistryConfig) Client() (*sr.Client, error) {
	if c.URL == "" {
		return nil, nil
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	opts := []sr.ClientOpt{sr.URLs(c.URL), sr.UserAgent("jobdrop")}
	if c.Username != "" {
		opts = append(opts, sr.BasicAuth(c.Username, c.Password))
	}
	if c.TLS.Enabled {
		tc, err := c.TLS.configAt("kafka.schema_registry.tls")
		if err != nil {
			return nil, err
		}
		opts = append(opts, sr.DialTLSConfig(tc))
	}
	return sr.NewClient(opts...)
}
