package devstack_test

import (
	"os/exec"
	"testing"
)

func TestZZCurlTmp(t *testing.T) {
	st := startUploadStack(t)
	out, err := exec.Command("curl", "-s", st.APIURL+"/v1/media", "-H", "Authorization: Bearer "+st.keyTwo,
		"-F", "phone_number_id="+uploadNumberB, "-F", "file=@../media/mediasample/photo.jpg;type=image/jpeg").CombinedOutput()
	t.Logf("%s %v", out, err)
	out, err = exec.Command("curl", "-s", "-i", st.APIURL+"/v1/media", "-H", "Authorization: Bearer "+st.keyTwo,
		"-F", "phone_number_id="+uploadNumberB, "-F", "file=@../media/mediasample/booking-form.pdf").CombinedOutput()
	t.Logf("%s %v", out, err)
}
