package kube

import (
	"fmt"
	"strings"
)

// stagesConfig is kwok's configuration: the Stages that walk the fake
// node to Ready and each pod bound to it Pending -> Running ->
// Succeeded or Failed (EnvFakeExit, after EnvFakeDuration or
// o.RunFor), and finish the deletion of a deleted pod (there is no real
// kubelet to confirm it). Selectors are jq over the object; templates are
// Go templates over it, with kwok's functions (Now, Quote, NodeIP, ...).
func stagesConfig(o SpokeOptions) []byte {
	exitQ := envQuery(EnvFakeExit) + ` // "0"`
	r := strings.NewReplacer(
		"$START_MS", fmt.Sprint(o.StartAfter.Milliseconds()),
		"$RUN_MS", fmt.Sprint(o.RunFor.Milliseconds()),
		"$EXIT_Q", exitQ,
		"$DURATION_Q", envQuery(EnvFakeDuration),
		"$EXIT_ENV", EnvFakeExit,
	)
	return []byte(r.Replace(stagesTemplate))
}

// envQuery is a jq expression for the value of the first container's
// environment variable name, null when it is not set.
func envQuery(name string) string {
	return `([.spec.containers.[0].env.[]? | select(.name == "` + name + `") | .value] | first)`
}

const stagesTemplate = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: scion-node-ready
spec:
  resourceRef: {apiGroup: v1, kind: Node}
  selector:
    matchExpressions:
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: NotIn
      values: ["True"]
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $now | Quote }}
        message: kwok is the kubelet
        reason: KubeletReady
        status: "True"
        type: Ready
      addresses:
      - address: {{ NodeIP | Quote }}
        type: InternalIP
      - address: {{ NodeName | Quote }}
        type: Hostname
      daemonEndpoints:
        kubeletEndpoint:
          Port: {{ NodePort }}
      allocatable: {cpu: "64", memory: 256Gi, pods: "1000", nvidia.com/gpu: "8"}
      capacity: {cpu: "64", memory: 256Gi, pods: "1000", nvidia.com/gpu: "8"}
      nodeInfo:
        architecture: amd64
        operatingSystem: linux
        kubeletVersion: fake
        containerRuntimeVersion: fake
        kernelVersion: fake
        kubeProxyVersion: fake
        bootID: ""
        machineID: ""
        osImage: ""
        systemUUID: ""
      phase: Running
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: scion-pod-running
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: .metadata.deletionTimestamp, operator: DoesNotExist}
    - {key: .spec.nodeName, operator: Exists}
    - {key: .status.phase, operator: In, values: [Pending]}
  delay:
    durationMilliseconds: $START_MS
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - {type: PodScheduled, status: "True", lastTransitionTime: {{ $now | Quote }}}
      - {type: Initialized, status: "True", lastTransitionTime: {{ $now | Quote }}}
      - {type: ContainersReady, status: "True", lastTransitionTime: {{ $now | Quote }}}
      - {type: Ready, status: "True", lastTransitionTime: {{ $now | Quote }}}
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        imageID: ""
        name: {{ .name | Quote }}
        ready: true
        started: true
        restartCount: 0
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}
      hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
      podIP: {{ PodIPWith .spec.nodeName false ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) | Quote }}
      phase: Running
      startTime: {{ $now | Quote }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: scion-pod-succeeded
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: .metadata.deletionTimestamp, operator: DoesNotExist}
    - {key: .status.phase, operator: In, values: [Running]}
    - {key: '$EXIT_Q', operator: In, values: ["0"]}
  delay:
    durationMilliseconds: $RUN_MS
    durationFrom:
      jq: {expression: '$DURATION_Q'}
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $started := or .status.startTime $now }}
      conditions:
      - {type: ContainersReady, status: "False", reason: PodCompleted, lastTransitionTime: {{ $now | Quote }}}
      - {type: Ready, status: "False", reason: PodCompleted, lastTransitionTime: {{ $now | Quote }}}
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        imageID: ""
        name: {{ .name | Quote }}
        ready: false
        started: false
        restartCount: 0
        state:
          terminated:
            exitCode: 0
            reason: Completed
            startedAt: {{ $started | Quote }}
            finishedAt: {{ $now | Quote }}
      {{ end }}
      phase: Succeeded
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: scion-pod-failed
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: .metadata.deletionTimestamp, operator: DoesNotExist}
    - {key: .status.phase, operator: In, values: [Running]}
    - {key: '$EXIT_Q', operator: NotIn, values: ["0"]}
  delay:
    durationMilliseconds: $RUN_MS
    durationFrom:
      jq: {expression: '$DURATION_Q'}
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $started := or .status.startTime $now }}
      {{ $exit := "1" }}
      {{ range (index .spec.containers 0).env }}{{ if eq .name "$EXIT_ENV" }}{{ $exit = .value }}{{ end }}{{ end }}
      conditions:
      - {type: ContainersReady, status: "False", reason: PodFailed, lastTransitionTime: {{ $now | Quote }}}
      - {type: Ready, status: "False", reason: PodFailed, lastTransitionTime: {{ $now | Quote }}}
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        imageID: ""
        name: {{ .name | Quote }}
        ready: false
        started: false
        restartCount: 0
        state:
          terminated:
            exitCode: {{ $exit }}
            reason: Error
            startedAt: {{ $started | Quote }}
            finishedAt: {{ $now | Quote }}
      {{ end }}
      phase: Failed
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: scion-pod-delete
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: .metadata.deletionTimestamp, operator: Exists}
  next:
    delete: true
`
