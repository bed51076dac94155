#!/usr/bin/env python3
"""Reference log-mel features of a real recording, computed by transformers'
Gemma3nAudioFeatureExtractor (its defaults: 16 kHz, 128 mels, 32 ms frames every 10 ms).

Input: tests/data/audio/pluck-pcm16.wav (CPython's test recording of a plucked string: 16-bit PCM,
stereo, 11025 Hz). Its channels are averaged to mono (float32), then resampled to 16 kHz by the
kernel mlxcel's mx_audio_resample defines (include/mlxcel/audio.h: a Hann-windowed sinc of 16
zero crossings, cutoff at the lower Nyquist frequency), written here in NumPy from that
definition; the extractor runs on those 16 kHz samples.
Output: tests/data/audio/pluck-mel.json: the resampled samples, the features [frames, 128] and the
frame mask, which tests/unit/test_audio.c compares with mlxcel's within 1e-4 (features) and 1e-6
(samples).

Run once (not in CI), with transformers + numpy:
    /tmp/famenv/bin/python tools/audio/make_mel_reference.py
"""
import json
import os
import wave

import numpy as np
import transformers
from transformers import Gemma3nAudioFeatureExtractor

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data",
                    "audio")
ZEROS = 16


def resample(x, rate_in, rate_out):
    n = len(x) * rate_out // rate_in
    c = min(1.0, rate_out / rate_in)
    half = ZEROS / c
    y = np.zeros(n, dtype=np.float64)
    xs = x.astype(np.float64)
    for m in range(n):
        t = m * rate_in / rate_out
        lo = max(0, int(np.ceil(t - half)))
        hi = min(len(x) - 1, int(np.floor(t + half)))
        u = t - np.arange(lo, hi + 1, dtype=np.float64)
        y[m] = np.sum(xs[lo:hi + 1] * c * np.sinc(c * u) * 0.5 * (1.0 + np.cos(np.pi * u / half)))
    return y.astype(np.float32)


def main():
    path = os.path.join(DATA, "pluck-pcm16.wav")
    with wave.open(path) as w:
        ch, width, rate, n = w.getnchannels(), w.getsampwidth(), w.getframerate(), w.getnframes()
        assert width == 2
        pcm = np.frombuffer(w.readframes(n), dtype="<i2").reshape(n, ch)
    mono = (pcm.astype(np.float64) / 32768.0).mean(axis=1).astype(np.float32)
    fe = Gemma3nAudioFeatureExtractor()
    x = resample(mono, rate, fe.sampling_rate)
    out = fe(x, return_tensors="np")
    feats = out["input_features"][0]
    mask = out["input_features_mask"][0]
    ref = {
        "source": "pluck-pcm16.wav (CPython Lib/test/audiodata; PSF license, see LICENSE.md)",
        "generator": "tools/audio/make_mel_reference.py",
        "transformers_version": transformers.__version__,
        "wav_rate": rate, "wav_channels": ch, "wav_frames": n,
        "rate": fe.sampling_rate, "n_mels": int(feats.shape[1]), "frames": int(feats.shape[0]),
        "samples": [float(v) for v in x],
        "mask": [int(v) for v in mask],
        "features": [[float(v) for v in r] for r in feats],
    }
    with open(os.path.join(DATA, "pluck-mel.json"), "w") as f:
        json.dump(ref, f)
        f.write("\n")
    print(f"{n} samples at {rate} Hz x {ch} -> {len(x)} at {fe.sampling_rate}: {feats.shape[0]} "
          f"frames ({int(mask.sum())} real), features {feats.min():.3f} .. {feats.max():.3f}")


if __name__ == "__main__":
    main()
