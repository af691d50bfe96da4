int main(void) { return 0; } /* replaced by the proxy */
