/*
 * alsa-stamp-capture DEVICE SECONDS OUT.raw OUT.stamps
 *
 * Records SECONDS of 48 kHz stereo S16_LE from the ALSA capture device DEVICE (e.g. the
 * loopback's capture side, hw:Loopback,1,0) into OUT.raw, and the device's own timing into
 * OUT.stamps: after every read, one line "FRAME SECONDS" saying that capture frame FRAME (counted
 * from 0 in OUT.raw) was taken at SECONDS on CLOCK_MONOTONIC (snd_pcm_htimestamp: the time of
 * the last hardware pointer update, and the frames available then). The first line is
 * "# realtime-monotonic OFFSET", to put these times on the Unix time a presentation trace uses.
 *
 * A test and bench helper (built with cc -O2 ... -lasound), not part of marquee. It starts capturing
 * at once and prints "capturing" on stdout when it does, so that the player started after it
 * finds the loopback's format fixed by the capture side.
 */
#include <alsa/asoundlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double seconds_of(struct timespec t) { return (double)t.tv_sec + (double)t.tv_nsec / 1e9; }

static int fail(const char *call, int code) {
    fprintf(stderr, "alsa-stamp-capture: %s failed: %s\n", call, snd_strerror(code));
    return 1;
}

static const unsigned rate = 48000, channels = 2;

/* Frames per read: the reader wakes ten times a second (each wake-up costs a loaded guest dearly);
 * a stamp's precision does not depend on it (the device's time of its last pointer update). */
static const snd_pcm_uframes_t chunk = 4800;

/* Opens DEVICE for capture: 48 kHz S16 stereo, 10 ms periods, a 2 s buffer (a reader held up in a
 * loaded guest loses nothing), woken once `chunk` frames are there, timestamps from
 * CLOCK_MONOTONIC. Non-zero on failure (printed). */
static int open_capture(const char *device, snd_pcm_t **out, snd_pcm_uframes_t *period_out) {
    snd_pcm_t *pcm;
    int r = snd_pcm_open(&pcm, device, SND_PCM_STREAM_CAPTURE, 0);
    if (r < 0) return fail("snd_pcm_open", r);
    snd_pcm_hw_params_t *hw;
    snd_pcm_hw_params_alloca(&hw);
    snd_pcm_hw_params_any(pcm, hw);
    if ((r = snd_pcm_hw_params_set_access(pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED)) < 0) return fail("set_access", r);
    if ((r = snd_pcm_hw_params_set_format(pcm, hw, SND_PCM_FORMAT_S16_LE)) < 0) return fail("set_format", r);
    if ((r = snd_pcm_hw_params_set_channels(pcm, hw, channels)) < 0) return fail("set_channels", r);
    if ((r = snd_pcm_hw_params_set_rate(pcm, hw, rate, 0)) < 0) return fail("set_rate", r);
    snd_pcm_uframes_t period = rate / 100, buffer = 2 * rate;
    if ((r = snd_pcm_hw_params_set_period_size_near(pcm, hw, &period, 0)) < 0) return fail("set_period_size_near", r);
    if ((r = snd_pcm_hw_params_set_buffer_size_near(pcm, hw, &buffer)) < 0) return fail("set_buffer_size_near", r);
    if ((r = snd_pcm_hw_params(pcm, hw)) < 0) return fail("snd_pcm_hw_params", r);
    snd_pcm_sw_params_t *sw;
    snd_pcm_sw_params_alloca(&sw);
    snd_pcm_sw_params_current(pcm, sw);
    if ((r = snd_pcm_sw_params_set_avail_min(pcm, sw, chunk)) < 0) return fail("set_avail_min", r);
    if ((r = snd_pcm_sw_params_set_tstamp_mode(pcm, sw, SND_PCM_TSTAMP_ENABLE)) < 0) return fail("set_tstamp_mode", r);
    if ((r = snd_pcm_sw_params_set_tstamp_type(pcm, sw, SND_PCM_TSTAMP_TYPE_MONOTONIC)) < 0) return fail("set_tstamp_type", r);
    if ((r = snd_pcm_sw_params(pcm, sw)) < 0) return fail("snd_pcm_sw_params", r);
    printf("capturing %s: %u Hz, %u channels, period %lu, buffer %lu frames\n", device, rate, channels,
           (unsigned long)period, (unsigned long)buffer);
    fflush(stdout);
    *out = pcm;
    *period_out = period;
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: alsa-stamp-capture DEVICE SECONDS OUT.raw OUT.stamps\n");
        return 2;
    }
    const char *device = argv[1];
    double seconds = atof(argv[2]);
    if (!(seconds > 0 && seconds <= 3600)) {
        fprintf(stderr, "alsa-stamp-capture: SECONDS must be from 0 to 3600, not %s\n", argv[2]);
        return 2;
    }
    FILE *raw = fopen(argv[3], "wb"), *stamps = fopen(argv[4], "w");
    if (!raw || !stamps) {
        fprintf(stderr, "alsa-stamp-capture: cannot write %s or %s\n", argv[3], argv[4]);
        return 1;
    }
    /* Killed at any moment, what was read is on disk. */
    setvbuf(stamps, NULL, _IOLBF, 0);
    snd_pcm_t *pcm;
    snd_pcm_uframes_t period;
    if (open_capture(device, &pcm, &period)) return 1;

    struct timespec real, mono;
    clock_gettime(CLOCK_REALTIME, &real);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    fprintf(stamps, "# realtime-monotonic %.9f\n", seconds_of(real) - seconds_of(mono));
    int r;
    if ((r = snd_pcm_start(pcm)) < 0) return fail("snd_pcm_start", r);

    short samples[2 * 4800];
    unsigned long long total = 0, wanted = (unsigned long long)(seconds * rate);
    unsigned overruns = 0;
    while (total < wanted) {
        snd_pcm_sframes_t got = snd_pcm_readi(pcm, samples, chunk);
        if (got == -EPIPE) {
            /* An overrun: the frames lost are unknown; the times go on from the device's. */
            overruns++;
            fprintf(stamps, "# overrun at %llu\n", total);
            snd_pcm_prepare(pcm);
            snd_pcm_start(pcm);
            continue;
        }
        if (got < 0) {
            /* Another error (the loopback's other side changing state): recover, else open it again;
             * the frames lost are unknown, the times go on from the device's. */
            fprintf(stamps, "# error at %llu: %s\n", total, snd_strerror((int)got));
            if (snd_pcm_recover(pcm, (int)got, 1) < 0 || snd_pcm_start(pcm) < 0) {
                snd_pcm_close(pcm);
                if (open_capture(device, &pcm, &period) || snd_pcm_start(pcm) < 0) return 1;
            }
            continue;
        }
        fwrite(samples, sizeof(short) * channels, (size_t)got, raw);
        fflush(raw);
        total += (unsigned long long)got;
        snd_pcm_uframes_t avail;
        snd_htimestamp_t ts;
        if (snd_pcm_htimestamp(pcm, &avail, &ts) == 0 && (ts.tv_sec || ts.tv_nsec)) {
            /* At ts the hardware pointer stood `avail` frames past what was read. */
            fprintf(stamps, "%llu %.9f\n", total + avail, seconds_of(ts));
        }
    }
    fprintf(stamps, "# frames %llu overruns %u\n", total, overruns);
    fclose(raw);
    fclose(stamps);
    snd_pcm_close(pcm);
    return 0;
}
