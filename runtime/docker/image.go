package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/client"
)

// DemoImage is the tag BuildDemoImage builds.
const DemoImage = "scion-demo:latest"

// LabelImageBuilder marks the images this package builds, so they can be
// found and removed.
const LabelImageBuilder = "scion.image.builder"

// ImageFile is one file of a ScratchImage.
type ImageFile struct {
	// Path is the file's absolute path in the image.
	Path string
	// Source is a host file to copy; if empty, Data is the content.
	Source string
	Data   []byte
	// Mode is the permission bits; 0 means 0755 for a Source (programs)
	// and 0644 for Data.
	Mode os.FileMode
}

// ScratchImage describes an image built FROM scratch: nothing but its
// files, plus a minimal root (/tmp, /etc/passwd with root and agent
// (uid 1000), /workspace and /home/agent).
type ScratchImage struct {
	Tag        string
	Files      []ImageFile
	Entrypoint []string
	Cmd        []string
	Env        map[string]string
	Labels     map[string]string
}

// Build builds the image through the engine's (classic) builder from a
// tar context streamed from memory and the Source files: no registry, no
// docker CLI, no BuildKit session. A rebuild under the same tag leaves the
// previous image untagged.
func (s ScratchImage) Build(ctx context.Context, cli client.ImageAPIClient) error {
	if s.Tag == "" {
		return errors.New("docker: image build: no tag")
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(s.writeContext(pw)) }()
	defer pr.Close()
	labels := maps.Clone(s.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelImageBuilder] = "scion"
	resp, err := cli.ImageBuild(ctx, pr, build.ImageBuildOptions{
		Tags:        []string{s.Tag},
		Dockerfile:  "Dockerfile",
		Remove:      true,
		ForceRemove: true,
		Labels:      labels,
		Version:     build.BuilderV1,
	})
	if err != nil {
		return fmt.Errorf("docker: build image %s: %w", s.Tag, err)
	}
	defer resp.Body.Close()
	if err := readBuildOutput(resp.Body); err != nil {
		return fmt.Errorf("docker: build image %s: %w", s.Tag, err)
	}
	return nil
}

// readBuildOutput drains the builder's JSON message stream and returns the
// error it reports, if any, with the output lines that led to it.
func readBuildOutput(r io.Reader) error {
	dec := json.NewDecoder(r)
	var last []string
	for {
		var m struct {
			Stream      string `json:"stream"`
			Error       string `json:"error"`
			ErrorDetail *struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
			m.Error = m.ErrorDetail.Message
		}
		if m.Error != "" {
			return fmt.Errorf("%s (after: %s)", m.Error, strings.Join(last, " | "))
		}
		if line := strings.TrimSpace(m.Stream); line != "" {
			last = append(last, line)
			if len(last) > 3 {
				last = last[1:]
			}
		}
	}
}

// writeContext writes the build context: a Dockerfile and rootfs/.
func (s ScratchImage) writeContext(w io.Writer) error {
	tw := tar.NewWriter(w)
	now := time.Now()
	dirs := map[string]bool{}
	var mkdirs func(dir string, mode int64) error
	mkdirs = func(dir string, mode int64) error {
		if dir == "/" || dir == "." || dirs[dir] {
			return nil
		}
		if err := mkdirs(path.Dir(dir), 0o755); err != nil {
			return err
		}
		dirs[dir] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "rootfs" + dir + "/", Mode: mode, ModTime: now})
	}
	file := func(name string, mode int64, size int64, body io.Reader) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: size, ModTime: now}); err != nil {
			return err
		}
		_, err := io.Copy(tw, body)
		return err
	}

	if err := mkdirs("/tmp", 0o1777); err != nil {
		return err
	}
	for _, d := range []string{WorkspacePath, HomePath} {
		if err := mkdirs(d, 0o755); err != nil {
			return err
		}
	}
	files := append([]ImageFile{
		{Path: "/etc/passwd", Data: []byte("root:x:0:0:root:/root:/sbin/nologin\nagent:x:1000:1000:agent:" + HomePath + ":/sbin/nologin\n")},
		{Path: "/etc/group", Data: []byte("root:x:0:\nagent:x:1000:\n")},
	}, s.Files...)
	for _, f := range files {
		if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path {
			return fmt.Errorf("image file path %q must be absolute and clean", f.Path)
		}
		if err := mkdirs(path.Dir(f.Path), 0o755); err != nil {
			return err
		}
		mode := int64(f.Mode.Perm())
		if f.Source == "" {
			if mode == 0 {
				mode = 0o644
			}
			if err := file("rootfs"+f.Path, mode, int64(len(f.Data)), bytes.NewReader(f.Data)); err != nil {
				return err
			}
			continue
		}
		if mode == 0 {
			mode = 0o755
		}
		src, err := os.Open(f.Source)
		if err != nil {
			return err
		}
		fi, err := src.Stat()
		if err == nil {
			err = file("rootfs"+f.Path, mode, fi.Size(), src)
		}
		src.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", f.Source, err)
		}
	}
	df := s.dockerfile()
	if err := file("Dockerfile", 0o644, int64(len(df)), strings.NewReader(df)); err != nil {
		return err
	}
	return tw.Close()
}

func (s ScratchImage) dockerfile() string {
	var b strings.Builder
	b.WriteString("FROM scratch\nCOPY rootfs/ /\n")
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		fmt.Fprintf(&b, "ENV %s=%s\n", k, strconv.Quote(s.Env[k]))
	}
	b.WriteString("WORKDIR " + WorkspacePath + "\n")
	if len(s.Entrypoint) > 0 {
		j, _ := json.Marshal(s.Entrypoint)
		fmt.Fprintf(&b, "ENTRYPOINT %s\n", j)
	}
	if len(s.Cmd) > 0 {
		j, _ := json.Marshal(s.Cmd)
		fmt.Fprintf(&b, "CMD %s\n", j)
	}
	return b.String()
}

// BuildScratchImage builds tag FROM scratch with the static binary at
// binaryPath as /usr/local/bin/scion, its entrypoint, and extraFiles (path
// in the image -> content; mode 0755 for ELF binaries and #! scripts, 0644
// otherwise). The binary must be static (CGO_ENABLED=0): the image has no
// libc.
func BuildScratchImage(ctx context.Context, cli client.ImageAPIClient, tag, binaryPath string, extraFiles map[string][]byte) error {
	img := ScratchImage{
		Tag:        tag,
		Files:      []ImageFile{{Path: ScionBinaryPath, Source: binaryPath}},
		Entrypoint: []string{ScionBinaryPath},
	}
	for _, p := range slices.Sorted(maps.Keys(extraFiles)) {
		data := extraFiles[p]
		var mode os.FileMode = 0o644
		if bytes.HasPrefix(data, []byte("\x7fELF")) || bytes.HasPrefix(data, []byte("#!")) {
			mode = 0o755
		}
		img.Files = append(img.Files, ImageFile{Path: p, Data: data, Mode: mode})
	}
	return img.Build(ctx, cli)
}

// hostCABundles are where Linux distributions keep the CA certificates;
// Go's TLS looks in the same places inside the image.
var hostCABundles = []string{
	"/etc/ssl/certs/ca-certificates.crt", // Debian, Ubuntu, Alpine
	"/etc/pki/tls/certs/ca-bundle.crt",   // Fedora, RHEL
	"/etc/ssl/ca-bundle.pem",             // openSUSE
}

// BuildDemoImage builds DemoImage, what `scion image build-demo` makes:
// the static scion binary at /usr/local/bin/scion as the entrypoint (the
// CLI chooses the default command), and the host's CA certificates, so
// that the scion inside can reach a Hub over TLS. It returns the tag.
func BuildDemoImage(ctx context.Context, cli client.ImageAPIClient, scionBinary string) (string, error) {
	extra := map[string][]byte{}
	for _, p := range hostCABundles {
		if data, err := os.ReadFile(p); err == nil {
			extra["/etc/ssl/certs/ca-certificates.crt"] = data
			break
		}
	}
	if err := BuildScratchImage(ctx, cli, DemoImage, scionBinary, extra); err != nil {
		return "", err
	}
	return DemoImage, nil
}
