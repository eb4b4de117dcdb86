/*
 * The renderer's own draw ceiling, for `make bench`: how fast this machine's EGL/GLES driver
 * (llvmpipe here) can upload and draw one full-screen picture, with no decoding at all. Renders
 * offscreen (EGL surfaceless, like Marquee's headless output) and prints one JSON object:
 *
 *   gl-ceiling WIDTH HEIGHT FRAMES
 *
 * Variants, each uploading fresh texture data every frame and drawing one quad:
 *   rgba_nearest   one RGBA8 texture, nearest sampling (the cheapest picture there is)
 *   yuv_nearest    three 8-bit planes (4:2:0), nearest, a colour matrix
 *   yuv_bilinear   three 8-bit planes (4:2:0), bilinear, a colour matrix
 *   fill           a constant colour, no texture (the fill rate alone)
 */
#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GLES3/gl3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double seconds(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void fail(const char *what, long code) {
    printf("{\"error\":\"%s failed (0x%lx)\"}\n", what, code);
    exit(1);
}

static const char *vertex_source =
    "#version 300 es\n"
    "out vec2 uv;\n"
    "void main() {\n"
    "  vec2 corner = vec2(float(gl_VertexID & 1), float(gl_VertexID >> 1));\n"
    "  uv = vec2(corner.x, 1.0 - corner.y);\n"
    "  gl_Position = vec4(corner * 2.0 - 1.0, 0.0, 1.0);\n"
    "}\n";

static const char *rgba_source =
    "#version 300 es\nprecision mediump float;\n"
    "uniform sampler2D picture; in vec2 uv; out vec4 color;\n"
    "void main() { color = texture(picture, uv); }\n";

static const char *yuv_source =
    "#version 300 es\nprecision mediump float;\n"
    "uniform sampler2D lumaPlane, cbPlane, crPlane; uniform mat3 matrix; uniform vec3 offset;\n"
    "in vec2 uv; out vec4 color;\n"
    "void main() {\n"
    "  vec3 yuv = vec3(texture(lumaPlane, uv).r, texture(cbPlane, uv).r, texture(crPlane, uv).r);\n"
    "  color = vec4(clamp(matrix * (yuv - offset), 0.0, 1.0), 1.0);\n"
    "}\n";

static const char *fill_source =
    "#version 300 es\nprecision mediump float;\nout vec4 color;\n"
    "void main() { color = vec4(0.2, 0.4, 0.6, 1.0); }\n";

static GLuint compile(GLenum kind, const char *source) {
    GLuint shader = glCreateShader(kind);
    glShaderSource(shader, 1, &source, NULL);
    glCompileShader(shader);
    GLint ok = 0;
    glGetShaderiv(shader, GL_COMPILE_STATUS, &ok);
    if (!ok) fail("glCompileShader", (long)kind);
    return shader;
}

static GLuint program(const char *fragment) {
    GLuint p = glCreateProgram();
    glAttachShader(p, compile(GL_VERTEX_SHADER, vertex_source));
    glAttachShader(p, compile(GL_FRAGMENT_SHADER, fragment));
    glLinkProgram(p);
    GLint ok = 0;
    glGetProgramiv(p, GL_LINK_STATUS, &ok);
    if (!ok) fail("glLinkProgram", 0);
    glUseProgram(p);
    return p;
}

static GLuint texture(GLenum unit, GLenum format, int width, int height, GLint filter) {
    GLuint name;
    glGenTextures(1, &name);
    glActiveTexture(unit);
    glBindTexture(GL_TEXTURE_2D, name);
    glTexStorage2D(GL_TEXTURE_2D, 1, format, width, height);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, filter);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, filter);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
    return name;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: gl-ceiling WIDTH HEIGHT FRAMES\n");
        return 2;
    }
    const int width = atoi(argv[1]), height = atoi(argv[2]), frames = atoi(argv[3]);
    if (width <= 0 || height <= 0 || frames <= 0) {
        fprintf(stderr, "gl-ceiling: WIDTH, HEIGHT and FRAMES must be positive\n");
        return 2;
    }

    PFNEGLGETPLATFORMDISPLAYEXTPROC get_display =
        (PFNEGLGETPLATFORMDISPLAYEXTPROC)eglGetProcAddress("eglGetPlatformDisplayEXT");
    if (!get_display) fail("eglGetProcAddress(eglGetPlatformDisplayEXT)", 0);
    EGLDisplay display = get_display(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, NULL);
    if (display == EGL_NO_DISPLAY || !eglInitialize(display, NULL, NULL)) fail("eglInitialize", eglGetError());
    if (!eglBindAPI(EGL_OPENGL_ES_API)) fail("eglBindAPI", eglGetError());
    const EGLint attributes[] = {EGL_CONTEXT_MAJOR_VERSION, 3, EGL_NONE};
    EGLContext context = eglCreateContext(display, EGL_NO_CONFIG_KHR, EGL_NO_CONTEXT, attributes);
    if (context == EGL_NO_CONTEXT) fail("eglCreateContext", eglGetError());
    if (!eglMakeCurrent(display, EGL_NO_SURFACE, EGL_NO_SURFACE, context)) fail("eglMakeCurrent", eglGetError());

    GLuint framebuffer, renderbuffer;
    glGenFramebuffers(1, &framebuffer);
    glBindFramebuffer(GL_FRAMEBUFFER, framebuffer);
    glGenRenderbuffers(1, &renderbuffer);
    glBindRenderbuffer(GL_RENDERBUFFER, renderbuffer);
    glRenderbufferStorage(GL_RENDERBUFFER, GL_RGBA8, width, height);
    glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER, renderbuffer);
    if (glCheckFramebufferStatus(GL_FRAMEBUFFER) != GL_FRAMEBUFFER_COMPLETE) fail("glCheckFramebufferStatus", 0);
    glViewport(0, 0, width, height);

    const int cw = (width + 1) / 2, ch = (height + 1) / 2;
    unsigned char *rgba = malloc((size_t)width * height * 4);
    unsigned char *luma = malloc((size_t)width * height);
    unsigned char *chroma = malloc((size_t)cw * ch);
    if (!rgba || !luma || !chroma) fail("malloc", 0);
    for (size_t i = 0; i < (size_t)width * height; i++) luma[i] = (unsigned char)(i * 7);
    for (size_t i = 0; i < (size_t)width * height * 4; i++) rgba[i] = (unsigned char)(i * 13);
    memset(chroma, 128, (size_t)cw * ch);

    const char *names[] = {"rgba_nearest", "yuv_nearest", "yuv_bilinear", "fill"};
    printf("{\"width\":%d,\"height\":%d,\"frames\":%d,\"renderer\":\"%s\"", width, height, frames,
           (const char *)glGetString(GL_RENDERER));
    for (int variant = 0; variant < 4; variant++) {
        GLuint p;
        if (variant == 0) {
            p = program(rgba_source);
            texture(GL_TEXTURE0, GL_RGBA8, width, height, GL_NEAREST);
            glUniform1i(glGetUniformLocation(p, "picture"), 0);
        } else if (variant <= 2) {
            GLint filter = variant == 1 ? GL_NEAREST : GL_LINEAR;
            p = program(yuv_source);
            texture(GL_TEXTURE0, GL_R8, width, height, filter);
            texture(GL_TEXTURE1, GL_R8, cw, ch, filter);
            texture(GL_TEXTURE2, GL_R8, cw, ch, filter);
            glUniform1i(glGetUniformLocation(p, "lumaPlane"), 0);
            glUniform1i(glGetUniformLocation(p, "cbPlane"), 1);
            glUniform1i(glGetUniformLocation(p, "crPlane"), 2);
            const GLfloat bt709[9] = {1.164f, 1.164f, 1.164f, 0.0f, -0.213f, 2.112f, 1.793f, -0.533f, 0.0f};
            glUniformMatrix3fv(glGetUniformLocation(p, "matrix"), 1, GL_FALSE, bt709);
            glUniform3f(glGetUniformLocation(p, "offset"), 16.0f / 255, 0.5f, 0.5f);
        } else {
            p = program(fill_source);
        }
        const int warmup = 3;
        double wall0 = 0, cpu0 = 0;
        for (int k = 0; k < frames + warmup; k++) {
            if (k == warmup) {
                glFinish();
                wall0 = seconds(CLOCK_MONOTONIC);
                cpu0 = seconds(CLOCK_PROCESS_CPUTIME_ID);
            }
            if (variant == 0) {
                glActiveTexture(GL_TEXTURE0);
                glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, rgba);
            } else if (variant <= 2) {
                glActiveTexture(GL_TEXTURE0);
                glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, width, height, GL_RED, GL_UNSIGNED_BYTE, luma);
                glActiveTexture(GL_TEXTURE1);
                glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, cw, ch, GL_RED, GL_UNSIGNED_BYTE, chroma);
                glActiveTexture(GL_TEXTURE2);
                glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, cw, ch, GL_RED, GL_UNSIGNED_BYTE, chroma);
            }
            glDrawArrays(GL_TRIANGLE_STRIP, 0, 4);
            glFinish();
        }
        double wall = (seconds(CLOCK_MONOTONIC) - wall0) / frames;
        double cpu = (seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu0) / frames;
        GLenum error = glGetError();
        if (error != GL_NO_ERROR) fail(names[variant], (long)error);
        printf(",\"%s\":{\"fps\":%.2f,\"wall_ms_per_frame\":%.3f,\"cpu_ms_per_frame\":%.3f}", names[variant],
               1.0 / wall, wall * 1000, cpu * 1000);
        glDeleteProgram(p);
    }
    printf("}\n");
    free(rgba);
    free(luma);
    free(chroma);
    eglMakeCurrent(display, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
    eglDestroyContext(display, context);
    eglTerminate(display);
    return 0;
}
