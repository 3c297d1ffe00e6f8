"""Memseek behind agent frameworks' own interfaces, each built on ``MemseekClient`` alone:

| module | framework (install it yourself) | gives |
| --- | --- | --- |
| ``langchain_retriever`` | ``langchain-core`` | ``MemseekRetriever`` (search), ``MemseekBriefRetriever`` (brief) |
| ``langgraph_store`` | ``langgraph`` | ``MemseekStore``, a ``BaseStore`` over named facts |
| ``openai_agents_tools`` | ``openai-agents`` | ``memseek_tools``: search, remember and brief as function tools |

Nothing here is imported by ``memseek_client`` itself: the SDK needs none of the frameworks, and
importing one of these modules without its framework raises ``ImportError`` naming it.
"""
