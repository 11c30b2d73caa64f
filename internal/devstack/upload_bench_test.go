package devstack_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/textproto"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wapipe/wapipe/internal/graph"
	"github.com/wapipe/wapipe/internal/service"
	"github.com/wapipe/wapipe/internal/testenv"
)

// BenchmarkMediaUpload20x5MB posts 20 uploads of 5 MB at once, again and again, to the api run as
// a process of its own (cmd/api, so its memory is its own) in front of the local stack's worker
// and fake Graph API (in this process: it keeps every file, so run few rounds, -benchtime=3x).
// It reports the api's peak resident memory (VmHWM; the goal is under
// 100 MiB: the file is streamed, never held) and the throughput.
func BenchmarkMediaUpload20x5MB(b *testing.B) {
	const uploads, size = 20, 5 * graph.MB
	st := startUploadStack(b)
	url, pid := apiProcess(b, st)
	idle := peakRSS(b, pid)
	upload := func() error {
		body, ctype := streamedForm(size)
		req, err := http.NewRequest(http.MethodPost, url+"/v1/media", body)
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", ctype)
		req.Header.Set("Authorization", "Bearer "+st.keyOne)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusCreated {
			return fmt.Errorf("status %d: %s", resp.StatusCode, out)
		}
		return nil
	}
	b.SetBytes(uploads * size)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		var wg sync.WaitGroup
		errs := make(chan error, uploads)
		for range uploads {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- upload()
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	peak := peakRSS(b, pid)
	b.ReportMetric(float64(peak)/(1<<20), "api-peak-RSS-MiB")
	b.ReportMetric(float64(idle)/(1<<20), "api-idle-RSS-MiB")
	b.ReportMetric(float64(b.N*uploads)/elapsed.Seconds(), "uploads/s")
}

// apiProcess runs cmd/api against st's emulators and worker; it returns its URL and pid.
func apiProcess(tb testing.TB, st uploadStack) (string, int) {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "api")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/wapipe/wapipe/cmd/api").CombinedOutput(); err != nil {
		tb.Fatalf("build cmd/api: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		"APP_ENV=dev", "GOOGLE_CLOUD_PROJECT="+st.Project, "TASKS_LOCATION="+st.Location,
		"FIRESTORE_EMULATOR_HOST="+st.FirestoreHost, "CLOUD_TASKS_EMULATOR_HOST="+st.TasksAddr,
		"INTERNAL_TASK_BASE_URL="+st.WorkerURL, "INTERNAL_TASK_TOKEN="+st.InternalToken, "PORT="+port,
		"GRAPH_API_BASE_URL="+st.GraphURL, "TRACE_EXPORTER=", "KMS_KEY_NAME=", "CONNECT_STATE_KMS_KEY_NAME=",
		"API_RATE_PER_ADDRESS=100000", "API_BURST_PER_ADDRESS=100000", "API_RATE_PER_KEY=100000", "API_BURST_PER_KEY=100000")
	logs := &testenv.LogBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := "http://" + addr
	deadline := time.Now().Add(60 * time.Second)
	for {
		// Ready once its clients are warm (the startup probe), as Cloud Run waits for it.
		resp, err := http.Get(url + service.StartupPath)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
			err = fmt.Errorf("startup probe %d", resp.StatusCode)
		}
		if time.Now().After(deadline) {
			tb.Fatalf("cmd/api never answered: %v\n%s", err, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return url, cmd.Process.Pid
}

// peakRSS is a process's peak resident memory in bytes (VmHWM in /proc/PID/status).
func peakRSS(tb testing.TB, pid int) int64 {
	tb.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return kb << 10
		}
	}
	tb.Fatal("no VmHWM")
	return 0
}

// streamedForm is a form with a file of size bytes, written as it is read: the client holds no
// copy either.
func streamedForm(size int) (io.Reader, string) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="file"; filename="photo.jpg"`)
		h.Set("Content-Type", "image/jpeg")
		w, err := mw.CreatePart(h)
		if err == nil {
			chunk := bytes.Repeat([]byte{0xa5}, 64<<10)
			for left := size; left > 0 && err == nil; left -= len(chunk) {
				_, err = w.Write(chunk[:min(len(chunk), left)])
			}
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr, mw.FormDataContentType()
}
