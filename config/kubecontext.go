package config

import "k8s.io/client-go/tools/clientcmd"

// KubeCurrentContext is the current context of the kubeconfig at path
// (with "": $KUBECONFIG, then ~/.kube/config, client-go's loading rules),
// the context an unset context setting means; "" when the kubeconfig
// names none or there is none. The Kubernetes runtime and `runtime-broker
// register --instance` both resolve an instance's target with it.
func KubeCurrentContext(path string) (string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		rules.ExplicitPath = path
	}
	raw, err := rules.Load()
	if err != nil {
		return "", err
	}
	return raw.CurrentContext, nil
}
