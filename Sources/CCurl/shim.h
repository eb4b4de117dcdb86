#ifndef MARQUEE_CCURL_SHIM_H
#define MARQUEE_CCURL_SHIM_H
#include <curl/curl.h>

// curl_easy_setopt and curl_easy_getinfo are variadic: Swift calls these typed forms.
static inline CURLcode mq_curl_set_long(CURL *c, CURLoption o, long v) { return curl_easy_setopt(c, o, v); }
static inline CURLcode mq_curl_set_off(CURL *c, CURLoption o, curl_off_t v) { return curl_easy_setopt(c, o, v); }
static inline CURLcode mq_curl_set_pointer(CURL *c, CURLoption o, void *v) { return curl_easy_setopt(c, o, v); }
static inline CURLcode mq_curl_set_string(CURL *c, CURLoption o, const char *v) { return curl_easy_setopt(c, o, v); }
static inline CURLcode mq_curl_set_list(CURL *c, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(c, o, v); }
static inline CURLcode mq_curl_set_write(CURL *c, size_t (*f)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, f);
}
static inline CURLcode mq_curl_set_header(CURL *c, size_t (*f)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, f);
}
static inline CURLcode mq_curl_set_progress(CURL *c, int (*f)(void *, curl_off_t, curl_off_t, curl_off_t, curl_off_t)) {
    return curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, f);
}
static inline CURLcode mq_curl_get_long(CURL *c, CURLINFO i, long *v) { return curl_easy_getinfo(c, i, v); }
static inline CURLcode mq_curl_get_off(CURL *c, CURLINFO i, curl_off_t *v) { return curl_easy_getinfo(c, i, v); }
#endif
